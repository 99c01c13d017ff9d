#!/usr/bin/env python3
"""check-vcxproj.py - PhoenixExecutor.sln must build the same files as CMake.

CMake is the source of truth (STYLE.md section 10). The Visual Studio
solution mirrors the CMake targets of the Windows configuration, one
project each under installer/vs/:

    px_base.vcxproj          px_base           (static library: base/)
    px_proto.vcxproj         px_proto          (static library: service/proto/)
    px_config.vcxproj        px_config         (static library: config/)
    px_kb.vcxproj            px_kb             (static library: kb/)
    px_sandbox_win.vcxproj   px_sandbox_win    (static library: watchdog/win/)
    px_sandbox_container.vcxproj px_sandbox_container (watchdog/container/)
    px_engine.vcxproj        px_engine         (static library: service/engine/)
    px_service.vcxproj       px_service        (static library: service/)
    px_client.vcxproj        px_client         (static library: tools/phoenixctl/)
    PhoenixExecutor.vcxproj  PhoenixExecutor   (the service)
    phoenixctl.vcxproj       phoenixctl

For each, the set of .c files in <ClCompile Include=...> must equal the .c
files of the CMake target's SOURCES, the preprocessor definitions of the
projects (installer/vs/PhoenixExecutor.props plus the project's own) must
include the target's COMPILE_DEFINITIONS (the mingw-only ones excepted, see
MINGW_ONLY), the project's include folders inside the repository must be
the target's INCLUDE_DIRECTORIES there (its own folder and the include/
folders of the layers it uses: the layering holds in Visual Studio too),
every listed file must exist, and PhoenixExecutor.sln must reference every
project by path and GUID.

Where CMake's lists come from:
  --sources FILE     installer/cmake-sources.txt of a Windows build tree
                     (written at generate time by installer/CMakeLists.txt
                     from $<TARGET_PROPERTY:t,SOURCES> and friends).
  --configure DIR    make a throwaway Windows configure in DIR with the
                     mingw toolchain and an empty stand-in for the cJSON and
                     libzmq prefix (configure only: no dependency build, no
                     compilation beyond CMake's compiler check), then read
                     its cmake-sources.txt. What the Linux ctest uses.
                     Exits 77 (skip) when no mingw-w64 compiler is found.

Other modes:
  --write            rewrite the <ItemGroup Label="Sources"> of every
                     project from CMake's lists (after adding or removing a
                     source file in CMake: run it, review, commit).
  --selftest DIR     prove the check fails when a file is missing on either
                     side, a define is missing or the version differs, and
                     passes on a matching pair (synthetic lists in DIR).

Exit status: 0 in step, 1 with every difference listed, 2 usage, 77 skip.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

NS = {"m": "http://schemas.microsoft.com/developer/msbuild/2003"}
PROJECTS = {
    "px_base": "installer/vs/px_base.vcxproj",
    "px_proto": "installer/vs/px_proto.vcxproj",
    "px_config": "installer/vs/px_config.vcxproj",
    "px_kb": "installer/vs/px_kb.vcxproj",
    "px_sandbox_win": "installer/vs/px_sandbox_win.vcxproj",
    "px_sandbox_container": "installer/vs/px_sandbox_container.vcxproj",
    "px_engine": "installer/vs/px_engine.vcxproj",
    "px_service": "installer/vs/px_service.vcxproj",
    "px_client": "installer/vs/px_client.vcxproj",
    "PhoenixExecutor": "installer/vs/PhoenixExecutor.vcxproj",
    "phoenixctl": "installer/vs/phoenixctl.vcxproj",
    "px-attest": "installer/vs/px-attest.vcxproj",
}
PROPS = "installer/vs/PhoenixExecutor.props"
SLN = "PhoenixExecutor.sln"
# Definitions CMake sets for mingw's C library only; MSVC's needs none.
MINGW_ONLY = {"__USE_MINGW_ANSI_STDIO=1"}
# The test seams (PX_TEST_SEAMS, docs/development.md): the CMake test
# presets define it through px_test_support; the solution builds the
# release configuration without it (no fake backend, no fault registry).
# The Windows tests are not in the solution: they need the seams in every
# library, so they build with CMake (the mingw presets here, the
# windows-msvc preset with Visual Studio; docs/installer.md).
SEAM_ONLY = {"PX_TEST_SEAMS=1"}


def fail_list(problems):
    for p in problems:
        print("vcxproj-sync: " + p)
    return 1 if problems else 0


# ---- CMake's side ----

def read_cmake_lists(path, root):
    """{target: {"sources": set(repo-relative .c), "defines": set}}, version"""
    targets, version = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if parts[0] == "version":
                version = parts[1]
            elif parts[0] == "target":
                name, srcdir, sources = parts[1], parts[2], parts[3]
                files = set()
                for s in filter(None, sources.split(";")):
                    p = os.path.normpath(os.path.join(srcdir, s))
                    rel = os.path.relpath(p, root)
                    # Generated files (build tree) and non-C items are not
                    # compiled from the source tree.
                    if rel.startswith("..") or not rel.endswith(".c"):
                        continue
                    files.add(rel.replace(os.sep, "/"))
                targets.setdefault(name, {})["sources"] = files
            elif parts[0] == "defines":
                targets.setdefault(parts[1], {})["defines"] = set(
                    filter(None, parts[2].split(";")))
            elif parts[0] == "includes":
                # Folders of the source tree only (not the build tree's
                # generated headers, not the dependencies' prefix).
                dirs = set()
                for d in filter(None, parts[2].split(";")):
                    rel = os.path.relpath(os.path.normpath(d), root)
                    if not rel.startswith("..") and not rel.startswith("build"):
                        dirs.add(rel.replace(os.sep, "/"))
                targets.setdefault(parts[1], {})["includes"] = dirs
    return targets, version


def side_configure(root, workdir):
    gcc = shutil.which("x86_64-w64-mingw32-gcc-posix") or shutil.which("x86_64-w64-mingw32-gcc")
    if not gcc or not shutil.which("cmake"):
        print("SKIP: no mingw-w64 gcc or cmake: cannot ask CMake for the Windows lists")
        sys.exit(77)
    if os.path.isdir(workdir):
        shutil.rmtree(workdir)
    deps = os.path.join(workdir, "stand-in-deps")
    for d in ("include/cjson", "lib"):
        os.makedirs(os.path.join(deps, d))
    for f in ("include/cjson/cJSON.h", "include/zmq.h", "lib/libcjson.a", "lib/libzmq.a"):
        open(os.path.join(deps, f), "w").close()
    build = os.path.join(workdir, "build")
    cmd = ["cmake", "-S", root, "-B", build,
           "-DCMAKE_TOOLCHAIN_FILE=" + os.path.join(root, "cmake/toolchain-mingw64.cmake"),
           "-DPX_DEPS_PREFIX=" + deps, "-DPX_TOOLCHAIN_NO_EMULATOR=ON",
           "-DPX_TEST_SEAMS=ON"]
    if shutil.which("ninja"):
        cmd += ["-G", "Ninja"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        print(r.stdout)
        print("vcxproj-sync: the throwaway Windows configure failed")
        sys.exit(1)
    return os.path.join(build, "installer", "cmake-sources.txt")


# ---- Visual Studio's side ----

def parse_project(path):
    tree = ET.parse(path)
    return tree.getroot()


def project_sources(root, relpath):
    proj = parse_project(os.path.join(root, relpath))
    base = os.path.dirname(os.path.join(root, relpath))
    files = set()
    for el in proj.iterfind(".//m:ItemGroup/m:ClCompile", NS):
        inc = el.get("Include").replace("\\", "/")
        p = os.path.normpath(os.path.join(base, inc))
        files.add(os.path.relpath(p, root).replace(os.sep, "/"))
    return files


def project_defines(root, relpath):
    """Definitions that apply to every configuration and every file."""
    defs = {}
    for rp in (PROPS, relpath):
        proj = parse_project(os.path.join(root, rp))
        for idg in proj.iterfind(".//m:ItemDefinitionGroup", NS):
            cond = idg.get("Condition") or "all"
            for el in idg.iterfind("m:ClCompile/m:PreprocessorDefinitions", NS):
                for d in (el.text or "").split(";"):
                    if d and not d.startswith("%("):
                        defs.setdefault(d, set()).add(cond)
    # A definition counts when set unconditionally or in every condition.
    conds = {c for cs in defs.values() for c in cs if c != "all"}
    return {d for d, cs in defs.items() if "all" in cs or (conds and cs >= conds)}


def project_includes(root, relpath):
    """The project's include folders inside the repository ($(PxRoot)...)."""
    dirs = set()
    for rp in (PROPS, relpath):
        proj = parse_project(os.path.join(root, rp))
        for el in proj.iterfind(".//m:ItemDefinitionGroup/m:ClCompile/"
                                "m:AdditionalIncludeDirectories", NS):
            for d in (el.text or "").split(";"):
                if d.startswith("$(PxRoot)"):
                    rel = d[len("$(PxRoot)"):].replace("\\", "/").strip("/")
                    dirs.add(rel or ".")
    return dirs


def project_guid(root, relpath):
    proj = parse_project(os.path.join(root, relpath))
    el = proj.find(".//m:PropertyGroup/m:ProjectGuid", NS)
    return el.text.strip().upper() if el is not None and el.text else None


def check(root, cmake, version):
    problems = []
    if version is None:
        problems.append("CMake's list has no version line")
    for target, rel in PROJECTS.items():
        if target not in cmake:
            problems.append(f"CMake has no target {target} (is this the Windows configuration?)")
            continue
        if not os.path.isfile(os.path.join(root, rel)):
            problems.append(f"{rel}: missing")
            continue
        vs = project_sources(root, rel)
        cm = cmake[target].get("sources", set())
        for f in sorted(cm - vs):
            problems.append(f"{rel}: lacks {f} (in CMake target {target})")
        for f in sorted(vs - cm):
            problems.append(f"{rel}: lists {f}, which CMake target {target} does not build")
        for f in sorted(vs):
            if not os.path.isfile(os.path.join(root, f)):
                problems.append(f"{rel}: {f} does not exist")
        vdefs = project_defines(root, rel)
        for d in sorted(cmake[target].get("defines", set()) - MINGW_ONLY - SEAM_ONLY - vdefs):
            problems.append(f"{rel}: lacks the definition {d} (CMake target {target} has it)")
        if "includes" in cmake[target]:
            vinc, cinc = project_includes(root, rel), cmake[target]["includes"]
            for d in sorted(cinc - vinc):
                problems.append(f"{rel}: lacks the include folder {d} (CMake target {target} has it)")
            for d in sorted(vinc - cinc):
                problems.append(f"{rel}: has the include folder {d}, which CMake target {target} has not")
    sln_path = os.path.join(root, SLN)
    if not os.path.isfile(sln_path):
        problems.append(f"{SLN}: missing")
    else:
        with open(sln_path, encoding="utf-8-sig") as f:
            sln = f.read()
        for target, rel in PROJECTS.items():
            if not os.path.isfile(os.path.join(root, rel)):
                continue
            winrel = rel.replace("/", "\\")
            guid = project_guid(root, rel)
            m = re.search(r'^Project\("\{[0-9A-F-]+\}"\) = "([^"]+)", "' + re.escape(winrel)
                          + r'", "(\{[0-9A-F-]+\})"', sln, re.M | re.I)
            if not m:
                problems.append(f"{SLN}: does not reference {winrel}")
            elif m.group(2).upper() != guid:
                problems.append(f"{SLN}: {winrel} has GUID {m.group(2)}, the project says {guid}")
    return problems


# ---- --write ----

def write_sources(root, cmake):
    for target, rel in PROJECTS.items():
        path = os.path.join(root, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        base = os.path.dirname(path)
        m = re.search(r'( *)<ItemGroup Label="Sources">\n(.*?)\1</ItemGroup>', text, re.S)
        if not m:
            print(f"vcxproj-sync: {rel}: no <ItemGroup Label=\"Sources\">")
            return 1
        indent = m.group(1)
        # Keep per-file metadata of entries that stay.
        kept = {}
        for em in re.finditer(r'( *)<ClCompile Include="([^"]+)"\s*(/>|>.*?</ClCompile>)',
                              m.group(2), re.S):
            kept[em.group(2)] = em.group(0).strip()
        lines = []
        for f in sorted(cmake[target]["sources"]):
            inc = os.path.relpath(os.path.join(root, f), base).replace("/", "\\")
            lines.append(indent + "  " + kept.get(inc, f'<ClCompile Include="{inc}" />'))
        new = f'{indent}<ItemGroup Label="Sources">\n' + "\n".join(lines) + f"\n{indent}</ItemGroup>"
        text = text[:m.start()] + new + text[m.end():]
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        print(f"vcxproj-sync: wrote {rel} ({len(lines)} sources)")
    return 0


# ---- --selftest ----

def selftest(root, workdir):
    """The check must fail on each kind of drift, and pass without it."""
    if os.path.isdir(workdir):
        shutil.rmtree(workdir)
    fake = os.path.join(workdir, "tree")
    shutil.copytree(os.path.join(root, "installer", "vs"), os.path.join(fake, "installer", "vs"))
    shutil.copy(os.path.join(root, SLN), os.path.join(fake, SLN))

    def lists(extra=None, drop=None, defines_extra=None, version=None,
              includes_extra=None):
        ver = version or "0.0.0"
        out = os.path.join(workdir, "cmake-sources.txt")
        with open(out, "w", encoding="utf-8") as f:
            f.write(f"version\t{ver}\n")
            for target, rel in PROJECTS.items():
                srcs = sorted(project_sources(fake, rel))
                if drop and drop[0] == target:
                    srcs.remove(drop[1])
                if extra and extra[0] == target:
                    srcs.append(extra[1])
                # Absolute paths like CMake's, inside the copied tree.
                f.write(f"target\t{target}\t{fake}\t"
                        + ";".join(os.path.join(fake, s) for s in srcs) + "\n")
                defs = sorted(project_defines(fake, rel) | MINGW_ONLY)
                if defines_extra and defines_extra[0] == target:
                    defs.append(defines_extra[1])
                f.write(f"defines\t{target}\t" + ";".join(defs) + "\n")
                incs = sorted(os.path.join(fake, d)
                              for d in project_includes(fake, rel))
                if includes_extra and includes_extra[0] == target:
                    incs.append(os.path.join(fake, includes_extra[1]))
                f.write(f"includes\t{target}\t" + ";".join(incs) + "\n")
        return out

    def run(path):
        cm, ver = read_cmake_lists(path, fake)
        return check(fake, cm, ver)

    # Sources in the copied tree must exist for the existence rule.
    for rel in PROJECTS.values():
        for f in project_sources(fake, rel):
            dst = os.path.join(fake, f)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if not os.path.exists(dst):
                open(dst, "w").close()

    results = []

    def expect(name, problems, ok, needle=None):
        good = (not problems) if ok else (bool(problems) and
                                          (needle is None or any(needle in p for p in problems)))
        results.append(good)
        print(("ok:   " if good else "FAIL: ") + name
              + ("" if ok else f" -> {problems[:2]}"))

    expect("matching lists pass", run(lists()), True)
    core = PROJECTS["px_service"]
    victim = sorted(project_sources(fake, core))[0]
    expect("a file CMake builds but the .vcxproj lacks fails",
           run(lists(extra=("px_service", "service/new_file.c"))), False, "lacks service/new_file.c")
    expect("a file the .vcxproj lists but CMake does not build fails",
           run(lists(drop=("px_service", victim))), False, "lists " + victim)
    expect("a CMake definition the projects lack fails",
           run(lists(defines_extra=("phoenixctl", "PX_SOMETHING=1"))), False, "PX_SOMETHING=1")
    expect("an include folder CMake has and the project lacks fails",
           run(lists(includes_extra=("px_config", "service/engine/include"))),
           False, "lacks the include folder service/engine/include")
    expect("another project version fails",
           run(lists(defines_extra=("px_service", 'PX_VERSION="99.0.0"'))), False, "99.0.0")
    # Remove a ClCompile from a copy of the project: CMake's side now has it.
    path = os.path.join(fake, core)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    inc = os.path.relpath(os.path.join(fake, victim), os.path.dirname(path)).replace("/", "\\")
    good_lists = lists()
    with open(path, "w", encoding="utf-8") as f:
        f.write(re.sub(r'\s*<ClCompile Include="' + re.escape(inc) + r'"[^>]*/>', "", text, count=1))
    expect("a ClCompile removed from px_service.vcxproj fails", run(good_lists), False, "lacks " + victim)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    os.remove(os.path.join(fake, victim))
    expect("a listed file that does not exist fails", run(good_lists), False, "does not exist")
    open(os.path.join(fake, victim), "w").close()
    with open(os.path.join(fake, SLN), encoding="utf-8-sig") as f:
        sln = f.read()
    with open(os.path.join(fake, SLN), "w", encoding="utf-8") as f:
        f.write(sln.replace("installer\\vs\\phoenixctl.vcxproj", "installer\\vs\\gone.vcxproj"))
    expect("a project missing from the .sln fails", run(good_lists), False, "does not reference")
    return 0 if all(results) else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--sources")
    g.add_argument("--configure")
    g.add_argument("--selftest")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    root = os.path.realpath(a.root)
    if a.selftest:
        return selftest(root, os.path.abspath(a.selftest))
    path = a.sources or side_configure(root, os.path.abspath(a.configure))
    cmake, version = read_cmake_lists(path, root)
    if a.write:
        return write_sources(root, cmake)
    problems = check(root, cmake, version)
    if problems:
        print("vcxproj-sync: PhoenixExecutor.sln is out of step with CMake; after "
              "changing a CMake source list run\n  tools/check-vcxproj.py --configure "
              "/tmp/vs-check --write\nand review the diff (docs/installer.md).")
        return fail_list(problems)
    print(f"vcxproj-sync: {len(PROJECTS)} projects in step with CMake ({version})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
