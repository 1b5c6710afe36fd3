"""scripts/dist.py check refuses a wheel whose extension needs a shared library
other than the C library's, or a newer glibc than its tag says, or whose
RECORD is wrong: the guard scripts/test_wheel.sh puts on every wheel. The
extensions here are tiny C shared objects compiled for the test."""

import importlib.util
import pathlib
import re
import shutil
import subprocess
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("dist", ROOT / "scripts" / "dist.py")
dist = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dist)

EXT = "_etpack.cpython-311-x86_64-linux-gnu.so"
# stat() is GLIBC_2.33 where it is linked against glibc >= 2.33.
SOURCE = ("#include <sys/stat.h>\n"
          "int PyInit__etpack(void) { struct stat s; return stat(\"/\", &s); }\n")


def extension(tmp_path, *libs):
    if shutil.which("cc") is None or shutil.which("readelf") is None:
        pytest.skip("needs cc and readelf")
    c = tmp_path / "ext.c"
    c.write_text(SOURCE)
    so = tmp_path / EXT
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(c), "-Wl,--no-as-needed", *libs],
                   check=True)
    return so


def wheel(tmp_path, so, tag):
    path = tmp_path / f"etpack-0.1.0-cp311-cp311-{tag}.whl"
    wheel_file = f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-{tag}\n"
    dist.write_wheel(path, [(f"etpack/{EXT}", so.read_bytes(), True),
                            ("etpack-0.1.0.dist-info/WHEEL", wheel_file.encode(), False)])
    return path


def glibc_minor(so):
    plat = dist.check_extension(so, EXT)
    m = re.fullmatch(r"manylinux_2_(\d+)_x86_64", plat)
    assert m, plat
    return int(m.group(1))


def test_the_tag_is_the_newest_glibc_referenced(tmp_path):
    so = extension(tmp_path)
    minor = glibc_minor(so)
    assert minor >= 33  # built against a glibc with stat@GLIBC_2.33 (Debian 12: 2.36)
    dist.check(wheel(tmp_path, so, f"manylinux_2_{minor}_x86_64"))
    for other in (17, minor - 1, minor + 1):
        with pytest.raises(dist.DistError,
                           match=f"is manylinux_2_{minor}_x86_64 .* the tag "
                                 f"manylinux_2_{other}_x86_64 says otherwise"):
            dist.check(wheel(tmp_path, so, f"manylinux_2_{other}_x86_64"))


def test_the_tag_names_the_elf_machine(tmp_path):
    so = extension(tmp_path)
    minor = glibc_minor(so)
    with pytest.raises(dist.DistError, match="the tag manylinux_2_.*_aarch64 says otherwise"):
        dist.check(wheel(tmp_path, so, f"manylinux_2_{minor}_aarch64"))


def test_a_tool_is_named_by_its_glibc_and_machine(tmp_path):
    if shutil.which("cc") is None or shutil.which("readelf") is None:
        pytest.skip("needs cc and readelf")
    c = tmp_path / "main.c"
    c.write_text("#include <sys/stat.h>\n"
                 "int main(void) { struct stat s; return stat(\"/\", &s); }\n")
    program = tmp_path / "etpack"
    subprocess.run(["cc", "-o", str(program), str(c)], check=True)
    plat = dist.check_extension(program, "etpack", exports=False)
    named = tmp_path / f"etpack-0.1.0-{plat}"
    program.rename(named)
    dist.check(named)
    wrong = tmp_path / "etpack-0.1.0-manylinux_2_17_x86_64"
    named.rename(wrong)
    with pytest.raises(dist.DistError, match=f"is {plat} .* its name says otherwise"):
        dist.check(wrong)


def test_a_shared_library_other_than_the_c_librarys_is_refused(tmp_path):
    so = extension(tmp_path, "-lstdc++")
    with pytest.raises(dist.DistError, match=r"other than the C library's: libstdc\+\+\.so\.6"):
        dist.check(wheel(tmp_path, so, "manylinux_2_36_x86_64"))


def test_an_rpath_is_refused(tmp_path):
    so = extension(tmp_path, "-Wl,-rpath,/opt/lib")
    with pytest.raises(dist.DistError, match="RPATH/RUNPATH"):
        dist.check(wheel(tmp_path, so, "manylinux_2_36_x86_64"))


def test_another_exported_symbol_is_refused(tmp_path):
    so = tmp_path / EXT
    c = tmp_path / "ext.c"
    c.write_text(SOURCE + "int helper(void) { return 1; }\n")
    if shutil.which("cc") is None:
        pytest.skip("needs cc")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(c)], check=True)
    with pytest.raises(dist.DistError, match="helper"):
        dist.check_extension(so, EXT)


def test_a_file_missing_from_record_or_changed_is_refused(tmp_path):
    so = extension(tmp_path)
    path = wheel(tmp_path, so, dist.check_extension(so, EXT))
    with zipfile.ZipFile(path, "a") as z:
        z.writestr("etpack/extra.py", "")
    with pytest.raises(dist.DistError, match="extra.py"):
        dist.check(path)


def macho(path, minos=(11, 0), dylibs=("/usr/lib/libSystem.B.dylib",), rpaths=(), cpu=0x0100000C):
    """A Mach-O program's header and the load commands dist.py reads (no
    code: the check reads only those), written to PATH."""
    le = lambda *words: b"".join(w.to_bytes(4, "little") for w in words)
    def named(cmd, fixed, name):
        body = fixed + name.encode() + b"\0"
        body += bytes(-(8 + len(body)) % 8)
        return le(cmd, 8 + len(body)) + body
    cmds = [le(dist.LC_BUILD_VERSION, 24, 1, (minos[0] << 16) | (minos[1] << 8), 0, 0)] if minos else []
    # dylib_command: name at offset 24, then timestamp and two versions.
    cmds += [named(dist.LC_LOAD_DYLIB, le(24, 2, 0x10000, 0x10000), d) for d in dylibs]
    cmds += [named(dist.LC_RPATH, le(12), r) for r in rpaths]
    body = b"".join(cmds)
    path.write_bytes(le(dist.MACHO_MAGIC, cpu, 0, 2, len(cmds), len(body), 0, 0) + body)
    return path


def test_a_macos_tool_is_named_by_its_lowest_macos_and_machine(tmp_path):
    tool = macho(tmp_path / "etpack-0.1.0-macosx_11_0_arm64")
    dist.check(tool)
    assert dist.program_platform(macho(tmp_path / "p", minos=(13, 3)), "p") == "macosx_13_3_arm64"
    wrong = macho(tmp_path / "etpack-0.1.0-macosx_10_9_arm64")
    with pytest.raises(dist.DistError, match="is macosx_11_0_arm64 .* its name says otherwise"):
        dist.check(wrong)


@pytest.mark.parametrize("kwargs, message", [
    ({"dylibs": ("/usr/lib/libSystem.B.dylib", "/opt/homebrew/lib/libzstd.1.dylib")},
     "other than the system's: /opt/homebrew/lib/libzstd.1.dylib"),
    ({"rpaths": ("@loader_path/../lib",)}, r"LC_RPATH \['@loader_path/../lib'\]"),
    ({"minos": None}, "names no lowest macOS version"),
    ({"cpu": 0x12}, "CPU type 0x12"),
])
def test_a_macos_tool_that_is_not_self_contained_is_refused(tmp_path, kwargs, message):
    with pytest.raises(dist.DistError, match=message):
        dist.check(macho(tmp_path / "etpack-0.1.0-macosx_11_0_arm64", **kwargs))
