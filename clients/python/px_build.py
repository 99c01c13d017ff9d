"""px_build.py - a minimal PEP 517 build backend for the phoenix-executor
client, standard library only (no setuptools, no wheel: pip installs the
package offline). It builds a pure-Python wheel of phoenix_executor/ and an
sdist of this directory. The name and version come from pyproject.toml."""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = "phoenix_executor"


def _meta():
    text = open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8").read()
    name = re.search(r'^name = "([^"]+)"', text, re.M).group(1)
    version = re.search(r'^version = "([^"]+)"', text, re.M).group(1)
    summary = re.search(r'^description = "([^"]+)"', text, re.M).group(1)
    return name, version, summary


def _dist(name):
    return name.replace("-", "_")


def _metadata_text():
    name, version, summary = _meta()
    readme = open(os.path.join(HERE, "README.md"), encoding="utf-8").read()
    return (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: {summary}\n"
            f"Requires-Python: >=3.8\nDescription-Content-Type: text/markdown\n\n{readme}")


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name, version, _ = _meta()
    info = f"{_dist(name)}-{version}.dist-info"
    wheel_name = f"{_dist(name)}-{version}-py3-none-any.whl"
    files = []
    for fn in sorted(os.listdir(os.path.join(HERE, PKG))):
        if fn.endswith(".py") or fn == "py.typed":
            with open(os.path.join(HERE, PKG, fn), "rb") as f:
                files.append((f"{PKG}/{fn}", f.read()))
    files.append((f"{info}/METADATA", _metadata_text().encode("utf-8")))
    files.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: px_build\n"
                                   b"Root-Is-Purelib: true\nTag: py3-none-any\n"))
    record = [_record_line(p, d) for p, d in files] + [f"{info}/RECORD,,"]
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode("utf-8")))
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            z.writestr(path, data)
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    name, version, _ = _meta()
    base = f"{_dist(name)}-{version}"
    out = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(out, "w:gz") as t:
        for rel in ["pyproject.toml", "px_build.py", "README.md"] + [
                f"{PKG}/{fn}" for fn in sorted(os.listdir(os.path.join(HERE, PKG)))
                if fn.endswith(".py") or fn == "py.typed"]:
            t.add(os.path.join(HERE, rel), arcname=f"{base}/{rel}")
        pkg_info = _metadata_text().encode("utf-8")
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(pkg_info)
        t.addfile(ti, io.BytesIO(pkg_info))
    return os.path.basename(out)
