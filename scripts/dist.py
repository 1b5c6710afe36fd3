#!/usr/bin/python3
"""Makes etpack's sdist and wheels, and checks wheels (docs/python.md,
"Wheels"). scripts/build_wheels.sh runs `sdist`, then `wheel` once per
interpreter; scripts/test_wheel.sh runs `check` on every wheel.

  scripts/dist.py sdist OUT
  scripts/dist.py wheel --build BUILD --python PYTHON --out OUT
  scripts/dist.py tool --build BUILD --out OUT
  scripts/dist.py check WHEEL_OR_TOOL...

sdist: etpack-<version>.tar.gz of the files git tracks (as the working tree
has them; symbolic links stay links: include/etpack is one, which
meson-python 0.12's sdist would drop) and PKG-INFO, so that `pip install
--no-build-isolation` builds it with meson-python.

wheel: BUILD is a meson build of the package (-Dwheel=true -Dpythons=...),
already compiled, natively or for another machine (scripts/cross), whose
python/etpack holds an extension for PYTHON's version. The wheel (PEP 427) holds the package's modules as `meson install`
would install them, that extension, and etpack-<version>.dist-info: METADATA
(from pyproject.toml by pyproject-metadata, as meson-python writes it, the
version being meson.build's), WHEEL, and RECORD (sha256 and size of every
file). Its tag is cpXY-cpXY-manylinux_2_N_<arch>: N is the newest
GLIBC_2.N symbol version the extension references (its ELF version needs),
so the tag says which glibc it needs, no more, no less (PEP 600), and <arch>
is the ELF file's machine (x86_64, aarch64).

tool: BUILD's apps/etpack (built self-contained by a wheel build), checked
as an extension is and copied to OUT/etpack-<version>-manylinux_2_N_<arch>,
named by the same rule: a file a CI runner can download and run.

check: RECORD lists every file with its right hash and size; the filename's
tag is the WHEEL file's; each extension loads only the C library's own
objects (NEEDED libc, libm, libpthread, libdl, librt, ld-linux), has no RPATH
or RUNPATH, exports only its PyInit_ function, and needs exactly the glibc
and is for exactly the machine its tag says. A tool (a file not named .whl)
likewise, but for exports. A failure names the wheel, the file and what was
found.
"""

import argparse
import base64
import csv
import gzip
import hashlib
import io
import json
import os
import pathlib
import re
import subprocess
import stat
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile

SOURCE = pathlib.Path(__file__).resolve().parents[1]
NAME = "etpack"
# The C library's own shared objects (glibc); anything else in NEEDED is a
# library the target machine may not have.
C_LIBRARY = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
             "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"}
# Zip entries get 1980-01-01 (zip's earliest), or SOURCE_DATE_EPOCH when
# later: the same inputs give the same wheel.
EPOCH = max(int(os.environ.get("SOURCE_DATE_EPOCH", "0")), 315532800)


class DistError(Exception):
    pass


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


# readelf's names of the ELF machines a manylinux tag can name.
MACHINES = {"Advanced Micro Devices X86-64": "x86_64", "AArch64": "aarch64"}


def elf_machine(path):
    """The manylinux architecture of an ELF file (x86_64, aarch64)."""
    m = re.search(r"^\s*Machine:\s+(.+?)\s*$", run(["readelf", "-h", "-W", path]), re.M)
    if not m or m.group(1) not in MACHINES:
        raise DistError(f"{path} is for machine {m.group(1) if m else '?'}, not one of "
                         f"{', '.join(MACHINES)}")
    return MACHINES[m.group(1)]


def elf_needs(path):
    """(NEEDED sonames, RPATH/RUNPATH values, {soname: [version names]},
    defined dynamic symbols) of an ELF shared object (readelf only, which
    reads every machine's ELF, where binutils' nm may not)."""
    dynamic = run(["readelf", "-d", "-W", path])
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    paths = re.findall(r"\((?:RPATH|RUNPATH)\)\s+Library r(?:un)?path: \[([^\]]*)\]", dynamic)
    versions = {}
    current = None
    for line in run(["readelf", "-V", "-W", path]).splitlines():
        m = re.search(r"Version: \d+\s+File: (\S+)\s+Cnt:", line)
        if m:
            current = versions.setdefault(m.group(1), [])
            continue
        m = re.search(r"Name: (\S+)\s+Flags:", line)
        if m and current is not None:
            current.append(m.group(1))
    # Num: Value Size Type Bind Vis Ndx Name[@version]
    exported = [fields[7].split("@")[0] for fields in
                (line.split() for line in run(["readelf", "--dyn-syms", "-W", path]).splitlines())
                if len(fields) >= 8 and fields[0].endswith(":") and fields[6] != "UND"
                and fields[4] in ("GLOBAL", "WEAK", "UNIQUE")]
    return needed, paths, versions, exported


def glibc_minor(versions):
    """N of the newest GLIBC_2.N among the referenced symbol versions."""
    minors = [int(m.group(1)) for names in versions.values() for name in names
              for m in [re.fullmatch(r"GLIBC_2\.(\d+)(?:\.\d+)?", name)] if m]
    if not minors:
        raise DistError("references no GLIBC_2.* symbol version (not linked against glibc?)")
    return max(minors)


# Mach-O (64-bit, little-endian): the header's magic and CPU types, and the
# load commands read here (mach-o/loader.h's numbers).
MACHO_MAGIC = 0xFEEDFACF
MACHO_CPUS = {0x0100000C: "arm64", 0x01000007: "x86_64"}
LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_REEXPORT_DYLIB = 0xC, 0x80000018, 0x8000001F
LC_RPATH, LC_BUILD_VERSION, LC_VERSION_MIN_MACOSX = 0x8000001C, 0x32, 0x24
# What every macOS program may load: the system library (libc, libm,
# libpthread and the rest are in it); zig links its libc++ in.
MACOS_SYSTEM = {"/usr/lib/libSystem.B.dylib"}


def is_macho(path):
    with open(path, "rb") as f:
        head = f.read(4)
    return len(head) == 4 and int.from_bytes(head, "little") == MACHO_MAGIC


def macho_platform(path, label):
    """The platform tag (macosx_X_Y_<arch>) of a self-contained Mach-O
    program: it loads only libSystem, has no run path, and its tag is the
    lowest macOS its build version names (LC_BUILD_VERSION's minos)."""
    data = pathlib.Path(path).read_bytes()
    u32 = lambda at: int.from_bytes(data[at:at + 4], "little")
    cpu, ncmds = u32(4), u32(16)
    if cpu not in MACHO_CPUS:
        raise DistError(f"{label} is a Mach-O file for CPU type {cpu:#x}, not one of "
                         f"{', '.join(MACHO_CPUS.values())}")
    at, dylibs, rpaths, minos = 32, [], [], None
    for _ in range(ncmds):
        cmd, size = u32(at), u32(at + 4)
        if size < 8 or at + size > len(data):
            raise DistError(f"{label}: a load command at {at} runs past the file")
        if cmd in (LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_REEXPORT_DYLIB, LC_RPATH):
            name = data[at + u32(at + 8):at + size].split(b"\0")[0].decode()
            (rpaths if cmd == LC_RPATH else dylibs).append(name)
        elif cmd in (LC_BUILD_VERSION, LC_VERSION_MIN_MACOSX):
            minos = u32(at + 12 if cmd == LC_BUILD_VERSION else at + 8)
        at += size
    others = [d for d in dylibs if d not in MACOS_SYSTEM]
    if others:
        raise DistError(f"{label} loads libraries other than the system's: {', '.join(others)}")
    if rpaths:
        raise DistError(f"{label} has a library search path (LC_RPATH {rpaths})")
    if minos is None:
        raise DistError(f"{label} names no lowest macOS version (no LC_BUILD_VERSION)")
    return f"macosx_{minos >> 16}_{(minos >> 8) & 0xFF}_{MACHO_CPUS[cpu]}"


def check_extension(path, label, exports=True):
    """The platform tag (manylinux_2_N_<arch>) of a self-contained extension
    (or with exports=False, program); raises DistError naming `label` when
    it is not self-contained."""
    needed, paths, versions, exported = elf_needs(path)
    others = [n for n in needed if n not in C_LIBRARY]
    if others:
        raise DistError(f"{label} needs shared libraries other than the C library's: "
                         f"{', '.join(others)} (NEEDED {', '.join(needed)}); link them "
                         "statically (meson.build, python/etpack/meson.build)")
    if paths:
        raise DistError(f"{label} has a library search path (RPATH/RUNPATH {paths})")
    unversioned = [f for f in versions if f not in C_LIBRARY]
    if unversioned:
        raise DistError(f"{label} needs symbol versions of {', '.join(unversioned)}")
    init = "PyInit_" + pathlib.Path(path).name.split(".")[0]
    if exports and exported != [init]:
        raise DistError(f"{label} exports {exported[:10]}, not only {init} "
                         "(python/etpack/_etpack.map)")
    return f"manylinux_2_{glibc_minor(versions)}_{elf_machine(path)}"


def interpreter(python):
    """cpXY of a CPython with the GIL."""
    info = json.loads(run([python, "-c",
        "import json, sys, sysconfig; print(json.dumps({"
        "'impl': sys.implementation.name, 'version': sys.version_info[:2], "
        "'gil_disabled': bool(sysconfig.get_config_var('Py_GIL_DISABLED'))}))"]))
    if info["impl"] != "cpython" or info["gil_disabled"]:
        raise DistError(f"{python}: only CPython with the GIL is supported "
                         f"(found {info['impl']}, free-threaded: {info['gil_disabled']})")
    return f"cp{info['version'][0]}{info['version'][1]}"


def build_version(build):
    """The version of etpack that BUILD is a build of, which must be this tree's."""
    version = json.loads(run(["meson", "introspect", "--projectinfo", str(build)]))["version"]
    if version != project_version():
        raise DistError(f"{build} is a build of etpack {version}, not of this tree's "
                         f"{project_version()}")
    return version


def metadata(version):
    """Core metadata from pyproject.toml, as meson-python makes it."""
    import packaging.version
    import pyproject_metadata

    with open(SOURCE / "pyproject.toml", "rb") as f:
        data = tomllib.load(f)
    meta = pyproject_metadata.StandardMetadata.from_pyproject(data, SOURCE)
    meta.version = packaging.version.Version(version)
    if str(meta.version) != version:
        raise DistError(f"meson.build's version {version!r} is not in PEP 440's normal "
                        f"form ({meta.version}), which the wheel's and sdist's names use")
    # Known now, so not dynamic: pyproject-metadata 0.9 (Debian 13) would
    # write "Dynamic: version", which a sdist's PKG-INFO must not have; 0.6
    # (Debian 12) writes no Dynamic field. meson-python does the same.
    if "version" in meta.dynamic:
        meta.dynamic.remove("version")
    return bytes(meta.as_rfc822())


def project_version():
    """meson.build's project version."""
    return json.loads(run(["meson", "introspect", "--projectinfo",
                           str(SOURCE / "meson.build")]))["version"]


def sdist(out):
    version = project_version()
    top = f"{NAME}-{version}"
    listed = run(["git", "-C", str(SOURCE), "ls-files", "-z"]).split("\0")
    os.makedirs(out, exist_ok=True)
    path = pathlib.Path(out) / f"{top}.tar.gz"
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=EPOCH) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def add(name, data=None, source=None):
            info = tarfile.TarInfo(f"{top}/{name}")
            info.mtime = EPOCH
            if source is not None and source.is_symlink():
                info.type, info.linkname = tarfile.SYMTYPE, os.readlink(source)
                tar.addfile(info)
                return
            if source is not None:
                data = source.read_bytes()
                executable = source.stat().st_mode & stat.S_IXUSR
            else:
                executable = False
            info.size, info.mode = len(data), 0o755 if executable else 0o644
            tar.addfile(info, io.BytesIO(data))

        for name in sorted(n for n in listed if n):
            source = SOURCE / name
            if not source.is_symlink() and not source.is_file():
                raise DistError(f"{source} is tracked by git but not a file in the working tree "
                                 "(deleted without `git rm`?)")
            add(name, source=source)
        add("PKG-INFO", data=metadata(version))
    os.replace(tmp, path)
    return path


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(path, files):
    """files: [(archive name, bytes, executable)]; RECORD added last."""
    dist_info = f"{NAME}-{path.name.split('-')[1]}.dist-info"
    rows = [(name, record_hash(data), str(len(data))) for name, data, _ in files]
    rows.append((f"{dist_info}/RECORD", "", ""))
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    files = files + [(f"{dist_info}/RECORD", out.getvalue().encode(), False)]
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, executable in files:
            info = zipfile.ZipInfo(name, date_time=time.gmtime(EPOCH)[:6])
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = ((0o755 if executable else 0o644) | 0o100000) << 16
            z.writestr(info, data)
    os.replace(tmp, path)


def pack(build, python, out):
    build = pathlib.Path(build).resolve()
    abi = interpreter(python)
    version = build_version(build)
    # _etpack.cpython-312-x86_64-linux-gnu.so, or -aarch64- in a cross build.
    found = sorted((build / "python" / NAME).glob(f"_etpack.cpython-{abi[2:]}-*.so"))
    if len(found) != 1:
        raise DistError(f"{build / 'python' / NAME} holds {len(found)} extensions for "
                         f"{abi} ({[f.name for f in found]}), not one: {build} was not "
                         f"configured with -Dpythons naming {python}, or not built")
    extension = found[0]
    tag = f"{abi}-{abi}-{check_extension(extension, extension)}"
    # The package's modules: what `meson install` installs into etpack/,
    # without the default interpreter's extension (each wheel has its own).
    installed = json.loads(run(["meson", "introspect", "--installed", str(build)]))
    files = []
    for src, dest in sorted(installed.items(), key=lambda kv: kv[1]):
        parts = pathlib.PurePosixPath(dest).parts
        if NAME not in parts[:-1] or dest.endswith(".so"):
            continue
        name = "/".join(parts[parts.index(NAME):])
        files.append((name, pathlib.Path(src).read_bytes(), False))
    if not any(name == f"{NAME}/__init__.py" for name, _, _ in files):
        raise DistError(f"meson introspect --installed {build} lists no {NAME}/__init__.py")
    files.append((f"{NAME}/{extension.name}", extension.read_bytes(), True))
    dist_info = f"{NAME}-{version}.dist-info"
    wheel_file = (f"Wheel-Version: 1.0\nGenerator: etpack scripts/dist.py\n"
                  f"Root-Is-Purelib: false\nTag: {tag}\n")
    files += [(f"{dist_info}/METADATA", metadata(version), False),
              (f"{dist_info}/WHEEL", wheel_file.encode(), False)]
    os.makedirs(out, exist_ok=True)
    path = pathlib.Path(out) / f"{NAME}-{version}-{tag}.whl"
    write_wheel(path, files)
    return path


def tool(build, out):
    build = pathlib.Path(build).resolve()
    version = build_version(build)
    program = build / "apps" / NAME
    if not program.is_file():
        raise DistError(f"{program} is missing: build it (ninja -C {build} apps/{NAME})")
    plat = program_platform(program, program)
    os.makedirs(out, exist_ok=True)
    path = pathlib.Path(out) / f"{NAME}-{version}-{plat}"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(program.read_bytes())
    tmp.chmod(0o755)
    os.replace(tmp, path)
    return path


def program_platform(path, label):
    """The platform tag of a self-contained etpack tool: Linux (ELF) or macOS (Mach-O)."""
    return macho_platform(path, label) if is_macho(path) else check_extension(
        path, label, exports=False)


def check_tool(path):
    path = pathlib.Path(path)
    m = re.fullmatch(rf"{NAME}-[^-]+-((?:manylinux|macosx)_\d+_\d+_\w+)", path.name)
    if not m:
        raise DistError(f"{path.name} is neither a wheel's filename nor a tool's "
                         f"({NAME}-VERSION-manylinux_2_N_ARCH or -macosx_X_Y_ARCH)")
    plat = program_platform(path, path.name)
    if plat != m.group(1):
        raise DistError(f"{path.name} is {plat} (its newest GLIBC_2.* symbol version or lowest "
                         f"macOS, and its machine); its name says otherwise (make it again: "
                         "scripts/build_wheels.sh)")


def check(wheel):
    wheel = pathlib.Path(wheel)
    if wheel.suffix != ".whl":
        return check_tool(wheel)
    m = re.fullmatch(r"([^-]+)-([^-]+)-([^-]+)-([^-]+)-([^-]+)\.whl", wheel.name)
    if not m:
        raise DistError(f"{wheel.name} is not a wheel's filename (name-version-py-abi-plat.whl)")
    name, version, py, abi, plat = m.groups()
    dist_info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        record = list(csv.reader(io.StringIO(z.read(f"{dist_info}/RECORD").decode())))
        listed = {row[0] for row in record}
        if listed != names:
            raise DistError(f"{wheel}: RECORD lists {sorted(listed - names)} not in the wheel "
                             f"and not {sorted(names - listed)} that is")
        for row in record:
            if row[0] == f"{dist_info}/RECORD":
                continue
            data = z.read(row[0])
            if row[1:] != [record_hash(data), str(len(data))]:
                raise DistError(f"{wheel}: RECORD says {row[1:]} for {row[0]}, which has "
                                 f"{[record_hash(data), str(len(data))]}")
        tags = re.findall(r"^Tag: (\S+)$", z.read(f"{dist_info}/WHEEL").decode(), re.M)
        if tags != [f"{py}-{abi}-{plat}"]:
            raise DistError(f"{wheel}: WHEEL says Tag {tags}, the filename {py}-{abi}-{plat}")
        extensions = [n for n in names if n.endswith(".so")]
        if not extensions:
            raise DistError(f"{wheel} holds no extension")
        with tempfile.TemporaryDirectory() as tmp:
            for n in extensions:
                path = pathlib.Path(tmp) / pathlib.PurePosixPath(n).name
                path.write_bytes(z.read(n))
                found = check_extension(path, f"{wheel.name}:{n}")
                if found != plat:
                    raise DistError(f"{wheel.name}:{n} is {found} (its newest GLIBC_2.* "
                                     f"symbol version, its ELF machine); the tag {plat} says "
                                     "otherwise (make it again: scripts/build_wheels.sh)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("sdist").add_argument("out")
    w = sub.add_parser("wheel")
    for option in ("--build", "--python", "--out"):
        w.add_argument(option, required=True)
    t = sub.add_parser("tool")
    for option in ("--build", "--out"):
        t.add_argument(option, required=True)
    sub.add_parser("check").add_argument("wheels", nargs="+")
    args = ap.parse_args()
    try:
        if args.command == "sdist":
            print(sdist(args.out))
        elif args.command == "wheel":
            print(pack(args.build, args.python, args.out))
        elif args.command == "tool":
            print(tool(args.build, args.out))
        else:
            for wheel in args.wheels:
                check(wheel)
                print(f"dist.py: {wheel}: " + ("RECORD, tag and extension check out"
                                              if wheel.endswith(".whl") else "tag checks out"))
    except (DistError, subprocess.CalledProcessError, OSError, KeyError) as e:
        detail = getattr(e, "stderr", None)
        print(f"dist.py: {e}{': ' + detail.strip() if detail else ''}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
