#!/usr/bin/python3
"""Makes the etpack wheel of one CPython from a wheel build tree, and checks
wheels. scripts/build_wheels.sh runs it once per interpreter; test_wheel.sh
checks every wheel with it.

  scripts/pack_wheel.py --build BUILD --python PYTHON --out DIR
  scripts/pack_wheel.py --check WHEEL...

BUILD is a meson build of the package (-Dwheel=true -Dpythons=...), already
compiled, whose python/etpack holds an extension for PYTHON's version. The
wheel (PEP 427) holds the package's modules as `meson install` would install
them, that extension, and etpack-<version>.dist-info: METADATA from
pyproject.toml (pyproject-metadata, as meson-python writes it, the version
being meson.build's), WHEEL, and RECORD (sha256 and size of every file). Its
tag is cpXY-cpXY-manylinux_2_N_<arch>: N is the newest GLIBC_2.N symbol
version the extension references, read from its ELF version needs, so the
tag says which glibc it needs, no more, no less (PEP 600).

--check re-reads a wheel: RECORD lists every file with its right hash and
size; the filename's tag is the WHEEL file's; each extension loads only the C
library's own objects (NEEDED libc, libm, libpthread, libdl, librt,
ld-linux), has no RPATH or RUNPATH, exports only its PyInit_ function, and
its glibc need is the tag's. Any of these failing is an error naming the
wheel, the file and what was found.
"""

import argparse
import base64
import csv
import hashlib
import io
import json
import os
import pathlib
import re
import subprocess
import sys
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


class WheelError(Exception):
    pass


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def elf_needs(path):
    """(NEEDED sonames, RPATH/RUNPATH values, {soname: [version names]},
    defined dynamic symbols) of an ELF shared object."""
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
    exported = [fields[-1] for fields in
                (line.split() for line in run(["nm", "-D", "--defined-only", path]).splitlines())
                if fields]
    return needed, paths, versions, exported


def glibc_minor(versions):
    """N of the newest GLIBC_2.N among the referenced symbol versions."""
    minors = [int(m.group(1)) for names in versions.values() for name in names
              for m in [re.fullmatch(r"GLIBC_2\.(\d+)(?:\.\d+)?", name)] if m]
    if not minors:
        raise WheelError("references no GLIBC_2.* symbol version (not linked against glibc?)")
    return max(minors)


def check_extension(path, label):
    """The platform tag's glibc minor of a self-contained extension; raises
    WheelError naming `label` when it is not self-contained."""
    needed, paths, versions, exported = elf_needs(path)
    others = [n for n in needed if n not in C_LIBRARY]
    if others:
        raise WheelError(f"{label} needs shared libraries other than the C library's: "
                         f"{', '.join(others)} (NEEDED {', '.join(needed)}); link them "
                         "statically (meson.build, python/etpack/meson.build)")
    if paths:
        raise WheelError(f"{label} has a library search path (RPATH/RUNPATH {paths})")
    unversioned = [f for f in versions if f not in C_LIBRARY]
    if unversioned:
        raise WheelError(f"{label} needs symbol versions of {', '.join(unversioned)}")
    init = "PyInit_" + pathlib.Path(path).name.split(".")[0]
    if exported != [init]:
        raise WheelError(f"{label} exports {exported[:10]}, not only {init} "
                         "(python/etpack/_etpack.map)")
    return glibc_minor(versions)


def interpreter(python):
    info = json.loads(run([python, "-c",
        "import json, sys, sysconfig; print(json.dumps({"
        "'impl': sys.implementation.name, 'version': sys.version_info[:2], "
        "'suffix': sysconfig.get_config_var('EXT_SUFFIX'), "
        "'gil_disabled': bool(sysconfig.get_config_var('Py_GIL_DISABLED')), "
        "'platform': sysconfig.get_platform()}))"]))
    if info["impl"] != "cpython" or info["gil_disabled"]:
        raise WheelError(f"{python}: only CPython with the GIL is supported "
                         f"(found {info['impl']}, free-threaded: {info['gil_disabled']})")
    arch = info["platform"].removeprefix("linux-")
    if arch == info["platform"]:
        raise WheelError(f"{python}: platform {info['platform']} is not Linux")
    return f"cp{info['version'][0]}{info['version'][1]}", info["suffix"], arch


def metadata(version):
    """Core metadata from pyproject.toml, as meson-python makes it."""
    import packaging.version
    import pyproject_metadata

    with open(SOURCE / "pyproject.toml", "rb") as f:
        data = tomllib.load(f)
    meta = pyproject_metadata.StandardMetadata.from_pyproject(data, SOURCE)
    meta.version = packaging.version.Version(version)
    core = meta.as_rfc822()
    core.headers["Version"] = [version]
    return bytes(core)


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
    abi, suffix, arch = interpreter(python)
    version = json.loads(run(["meson", "introspect", "--projectinfo", str(build)]))["version"]
    extension = build / "python" / NAME / f"_etpack{suffix}"
    if not extension.is_file():
        raise WheelError(f"{extension} is missing: {build} was not configured with "
                         f"-Dpythons naming {python}, or not built")
    tag = f"{abi}-{abi}-manylinux_2_{check_extension(extension, extension)}_{arch}"
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
        raise WheelError(f"meson introspect --installed {build} lists no {NAME}/__init__.py")
    files.append((f"{NAME}/{extension.name}", extension.read_bytes(), True))
    dist_info = f"{NAME}-{version}.dist-info"
    wheel_file = (f"Wheel-Version: 1.0\nGenerator: etpack scripts/pack_wheel.py\n"
                  f"Root-Is-Purelib: false\nTag: {tag}\n")
    files += [(f"{dist_info}/METADATA", metadata(version), False),
              (f"{dist_info}/WHEEL", wheel_file.encode(), False)]
    os.makedirs(out, exist_ok=True)
    path = pathlib.Path(out) / f"{NAME}-{version}-{tag}.whl"
    write_wheel(path, files)
    return path


def check(wheel):
    wheel = pathlib.Path(wheel)
    m = re.fullmatch(r"([^-]+)-([^-]+)-([^-]+)-([^-]+)-([^-]+)\.whl", wheel.name)
    if not m:
        raise WheelError(f"{wheel.name} is not a wheel's filename (name-version-py-abi-plat.whl)")
    name, version, py, abi, plat = m.groups()
    dist_info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        record = list(csv.reader(io.StringIO(z.read(f"{dist_info}/RECORD").decode())))
        listed = {row[0] for row in record}
        if listed != names:
            raise WheelError(f"{wheel}: RECORD lists {sorted(listed - names)} not in the wheel "
                             f"and not {sorted(names - listed)} that is")
        for row in record:
            if row[0] == f"{dist_info}/RECORD":
                continue
            data = z.read(row[0])
            if row[1:] != [record_hash(data), str(len(data))]:
                raise WheelError(f"{wheel}: RECORD says {row[1:]} for {row[0]}, which has "
                                 f"{[record_hash(data), str(len(data))]}")
        tags = re.findall(r"^Tag: (\S+)$", z.read(f"{dist_info}/WHEEL").decode(), re.M)
        if tags != [f"{py}-{abi}-{plat}"]:
            raise WheelError(f"{wheel}: WHEEL says Tag {tags}, the filename {py}-{abi}-{plat}")
        extensions = [n for n in names if n.endswith(".so")]
        if not extensions:
            raise WheelError(f"{wheel} holds no extension")
        with tempfile.TemporaryDirectory() as tmp:
            for n in extensions:
                path = pathlib.Path(tmp) / pathlib.PurePosixPath(n).name
                path.write_bytes(z.read(n))
                minor = check_extension(path, f"{wheel.name}:{n}")
                m = re.fullmatch(r"manylinux_2_(\d+)_\w+", plat)
                if not m or int(m.group(1)) != minor:
                    raise WheelError(f"{wheel.name}:{n} references GLIBC_2.{minor} symbols; "
                                     f"the tag {plat} says otherwise (repack it: "
                                     "scripts/pack_wheel.py)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build")
    ap.add_argument("--python")
    ap.add_argument("--out")
    ap.add_argument("--check", nargs="+", metavar="WHEEL")
    args = ap.parse_args()
    try:
        if args.check:
            for wheel in args.check:
                check(wheel)
                print(f"pack_wheel: {wheel}: RECORD, tag and extension check out")
        elif args.build and args.python and args.out:
            print(pack(args.build, args.python, args.out))
        else:
            ap.error("give --build, --python and --out, or --check WHEEL...")
    except (WheelError, subprocess.CalledProcessError, OSError, KeyError) as e:
        detail = getattr(e, "stderr", None)
        print(f"pack_wheel: {e}{': ' + detail.strip() if detail else ''}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
