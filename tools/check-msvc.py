#!/usr/bin/env python3
"""check-msvc.py - what MSVC and the Windows SDK would refuse, caught here.

Nobody compiles PhoenixExecutor.sln on this machine (there is no MSVC on
Linux), and mingw-w64's headers are more forgiving than the Windows SDK's.
This check reads every C file the Visual Studio projects compile
(installer/vs/*.vcxproj) and the project headers they include, in include
order, and reports the classes of error that are decidable from the text:

  ntsecapi-order  <ntsecapi.h> (directly, or through <security.h>/<sspi.h>)
                  before <winternl.h>, or after it without _NTDEF_ defined:
                  the SDK then defines UNICODE_STRING/STRING twice (C2371).
  sdk-nt-type     FILE_*_INFORMATION structs and File*Information classes
                  (other than FileDirectoryInformation): mingw's winternl.h
                  has them, the SDK's does not (they are the WDK's ntifs.h).
  thread-local    _Thread_local / thread_local: MSVC's C compiler has
                  neither; use PX_THREAD_LOCAL (px/px_attr.h).
  gnu-extension   __attribute__, __typeof__, typeof, __builtin_*, __int128,
                  statement expressions, empty initialisers "= {}", outside
                  an #if that excludes MSVC.
  posix           POSIX headers and functions the MS C runtime lacks
                  (unistd.h, pthread.h, strndup, strtok_r, strcasecmp,
                  ssize_t, clock_gettime, ...), outside such an #if.
  c11atomics      <stdatomic.h> in a project that does not pass
                  /experimental:c11atomics (VS 17.5+).

The compiler catches more of the same family here: the mingw build adds
-Wvla and -Wpointer-arith (MSVC has no VLAs and no arithmetic on void *),
see cmake/PxBuild.cmake. What only MSVC itself will find is listed in
docs/windows-verification.md, "The MSVC build".

An #if whose condition names __GNUC__, __clang__ or __MINGW32__, an
#ifndef _MSC_VER, or the #else/#elif after an #if naming _MSC_VER, marks
its lines as not seen by MSVC. A line may opt out with the comment
"check-msvc: allow - <reason>".

Usage:
  tools/check-msvc.py                 check the tree (exit 0 clean, 1 findings)
  tools/check-msvc.py --selftest DIR  prove every rule fires on a synthetic
                                      tree in DIR and a clean one passes
"""
import os
import re
import sys
import xml.etree.ElementTree as ET

NS = {"m": "http://schemas.microsoft.com/developer/msbuild/2003"}
VS_DIR = "installer/vs"

# SDK headers that pull <ntsecapi.h> in.
NTSECAPI_VIA = {"ntsecapi.h", "security.h", "sspi.h"}
SDK_OK_NT = {"BY_HANDLE_FILE_INFORMATION", "FILE_NOTIFY_INFORMATION",
             "FILE_NOTIFY_EXTENDED_INFORMATION", "FileDirectoryInformation"}
POSIX_HEADERS = {"unistd.h", "pthread.h", "strings.h", "dirent.h",
                 "libgen.h", "poll.h", "dlfcn.h", "termios.h", "sys/time.h",
                 "sys/socket.h", "sys/wait.h", "sys/mman.h", "sys/ioctl.h",
                 "sys/un.h", "netinet/in.h", "arpa/inet.h", "netdb.h"}
POSIX_FUNCS = ["strndup", "strtok_r", "strcasecmp", "strncasecmp",
               "asprintf", "vasprintf", "memmem", "clock_gettime", "usleep",
               "nanosleep", "gmtime_r", "localtime_r", "getline", "strsep",
               "timegm", "setenv", "unsetenv", "realpath", "mkstemp",
               "strerror_r", "fdopen_r", "pipe2"]

RE_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
RE_DEFINE_NTDEF = re.compile(r'^\s*#\s*define\s+_NTDEF_\b')
RE_RULES = [
    ("sdk-nt-type", re.compile(r'\b(FILE_[A-Z_]+_INFORMATION|File[A-Za-z]+Information)\b')),
    ("thread-local", re.compile(r'\b(_Thread_local|thread_local)\b')),
    ("gnu-extension", re.compile(
        r'\b(__attribute__|__typeof__|typeof|__builtin_\w+|__int128)\b'
        r'|\(\s*\{|=\s*\{\s*\}')),
    ("posix", re.compile(r'\bssize_t\b|(?<![\w.>])(' + "|".join(POSIX_FUNCS)
                         + r')\s*\(')),
]
# Macros MSVC defines (a Windows build), and macros it never defines.
WIN = r'(?:_MSC_VER|_WIN32|_WIN64)'
NON_MSVC = re.compile(r'\b(?:__GNUC__|__clang__|__MINGW32__|__MINGW64__|__linux__|__unix__|__APPLE__)\b')
NEG_WIN = re.compile(r'!\s*defined\s*\(?\s*' + WIN + r'\b')
POS_WIN = re.compile(r'\b' + WIN + r'\b')


def strip_code(src):
    """Blank comments and string/char literals, keeping line numbers."""
    def repl(m):
        s = m.group(0)
        if s[0] in "\"'":
            return s[0] * 2
        return re.sub(r'[^\n]', ' ', s)
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                  repl, src, flags=re.S)


class Frame:
    """One #if group: is the current branch hidden from MSVC?"""
    def __init__(self, cond, kind):
        self.hidden = branch_hidden(cond, kind)
        # "#if defined(_WIN32)" / "#ifdef _MSC_VER": MSVC takes this branch,
        # so it never sees the #elif/#else ones.
        self.win_taken = (kind == "ifdef" and bool(re.fullmatch(WIN, cond.strip()))) or \
            (kind == "if" and bool(POS_WIN.search(cond)) and not NEG_WIN.search(cond)
             and "||" not in cond and not pos_non_msvc(cond))

    def other_branch(self, cond):
        self.hidden = self.win_taken or (cond is not None and branch_hidden(cond, "if"))


def branch_hidden(cond, kind):
    c = cond.strip()
    if kind == "ifndef":
        return bool(re.fullmatch(WIN, c))
    if kind == "ifdef":
        return bool(NON_MSVC.fullmatch(c))
    if NEG_WIN.search(c) and "||" not in c:
        return True
    return "||" not in c and pos_non_msvc(c)


def pos_non_msvc(c):
    """A macro MSVC never defines, named positively: "defined(__GNUC__)"
    (not "!defined(__clang__)")."""
    for m in NON_MSVC.finditer(c):
        if not re.search(r'!\s*(defined\s*\(?\s*)?$', c[:m.start()]):
            return True
    return False


class Checker:
    def __init__(self, root):
        self.root = root
        self.findings = set()

    def include_dirs(self):
        """Every layer's public include folder (<folder>/include)."""
        if not hasattr(self, "_incs"):
            self._incs = []
            for d, subdirs, _files in os.walk(self.root):
                subdirs[:] = [s for s in subdirs
                              if not s.startswith((".", "build"))]
                if os.path.basename(d) == "include":
                    self._incs.append(d)
        return self._incs

    def resolve(self, inc, cur_dir):
        # The including file's folder and its parents (a layer's private
        # path is its folder: "config_int.h" from config/win/), then the
        # layers' public folders ("px/px_job.h").
        bases, d = [], cur_dir
        while d.startswith(self.root) and d != os.path.dirname(self.root):
            bases.append(d)
            d = os.path.dirname(d)
        for base in bases + self.include_dirs():
            p = os.path.normpath(os.path.join(base, inc))
            if os.path.isfile(p):
                return p
        return None

    def report(self, path, line, rule, text):
        rel = os.path.relpath(path, self.root)
        self.findings.add(f"{rel}:{line}: {rule}: {text.strip()}")

    def check_tu(self, path, atomics_ok):
        st = {"seen": set(), "ntsecapi": None, "winternl": False, "ntdef": False}
        self.walk(path, st, atomics_ok)

    def walk(self, path, st, atomics_ok):
        if path in st["seen"]:
            return
        st["seen"].add(path)
        try:
            src = open(path, encoding="utf-8", errors="replace").read()
        except OSError:
            return
        orig = src.split("\n")
        code = strip_code(src).split("\n")
        stack = []
        for n, line in enumerate(code, 1):
            raw = orig[n - 1] if n - 1 < len(orig) else ""
            d = re.match(r'^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)', line)
            if d:
                kind, rest = d.group(1), d.group(2)
                if kind in ("if", "ifdef", "ifndef"):
                    stack.append(Frame(rest, kind))
                elif kind == "elif" and stack:
                    stack[-1].other_branch(rest)
                elif kind == "else" and stack:
                    stack[-1].other_branch(None)
                elif kind == "endif" and stack:
                    stack.pop()
                continue
            if any(f.hidden for f in stack) or "check-msvc: allow" in raw:
                continue
            if RE_DEFINE_NTDEF.match(line):
                st["ntdef"] = True
            m = RE_INCLUDE.match(raw)
            if m:
                self.on_include(path, n, raw, m.group(1), m.group(2), st, atomics_ok)
                continue
            for rule, rx in RE_RULES:
                for hit in rx.finditer(line):
                    if rule == "sdk-nt-type" and hit.group(0) in SDK_OK_NT:
                        continue
                    self.report(path, n, rule, raw)
                    break

    def on_include(self, path, n, raw, kind, inc, st, atomics_ok):
        name = inc.lower()
        if kind == "<":
            if name in NTSECAPI_VIA:
                if st["winternl"] and not st["ntdef"]:
                    self.report(path, n, "ntsecapi-order",
                                f"<{inc}> after <winternl.h> without _NTDEF_ defined")
                st["ntsecapi"] = st["ntsecapi"] or f"<{inc}>"
            elif name == "winternl.h":
                if st["ntsecapi"] and not st["winternl"]:
                    self.report(path, n, "ntsecapi-order",
                                f"<winternl.h> after {st['ntsecapi']} (C2371)")
                st["winternl"] = True
            elif name in POSIX_HEADERS:
                self.report(path, n, "posix", raw)
            elif name == "stdatomic.h" and not atomics_ok:
                self.report(path, n, "c11atomics", raw + "  (project lacks /experimental:c11atomics)")
            return
        p = self.resolve(inc, os.path.dirname(path))
        if p:
            self.walk(p, st, atomics_ok)


def projects(root):
    """(sources, atomics_ok) per project of the solution."""
    out = []
    props = os.path.join(root, VS_DIR, "PhoenixExecutor.props")
    props_atomics = os.path.isfile(props) and "c11atomics" in open(props).read()
    for f in sorted(os.listdir(os.path.join(root, VS_DIR))):
        if not f.endswith(".vcxproj"):
            continue
        p = os.path.join(root, VS_DIR, f)
        text = open(p, encoding="utf-8").read()
        tree = ET.fromstring(text)
        srcs = []
        for el in tree.iterfind(".//m:ClCompile", NS):
            inc = el.get("Include")
            if inc and inc.endswith(".c"):
                inc = inc.replace("\\", "/")
                if inc.startswith("$(PxRoot)"):
                    inc = os.path.join(root, inc[len("$(PxRoot)"):])
                srcs.append(os.path.normpath(os.path.join(os.path.dirname(p), inc)))
        out.append((f, srcs, props_atomics or "c11atomics" in text))
    return out


def check(root):
    c = Checker(root)
    n = 0
    for _name, srcs, atomics in projects(root):
        for s in srcs:
            if not os.path.isfile(s):
                c.findings.add(f"{os.path.relpath(s, root)}: missing: listed in a .vcxproj")
                continue
            c.check_tu(s, atomics)
            n += 1
    for f in sorted(c.findings):
        print(f)
    print(f"check-msvc: {n} translation units, {len(c.findings)} findings")
    return 1 if c.findings else 0


SELFTEST_BAD = {
    "order.c": "#include <windows.h>\n#include <ntsecapi.h>\n#include <winternl.h>\n",
    "via.c": "#include <security.h>\n#include \"hdr.h\"\n",
    "hdr.h": "#include <winternl.h>\n",
    "nontdef.c": "#include <winternl.h>\n#include <ntsecapi.h>\n",
    "ntype.c": "static FILE_RENAME_INFORMATION *ri;\nint c = FileRenameInformation;\n",
    "tls.c": "static _Thread_local int depth;\n",
    "attr.c": "void f(void) __attribute__((noreturn));\nstruct s x = {};\n",
    "posix.c": "#include <unistd.h>\nssize_t n;\nvoid g(void) { char *p = strndup(\"a\", 1); }\n",
    "atomic.c": "#include <stdatomic.h>\n",
}
SELFTEST_GOOD = {
    "order.c": "#include <winternl.h>\n#define _NTDEF_\n#include <ntsecapi.h>\n",
    "via.c": "#include \"hdr.h\"\n#define _NTDEF_\n#include <security.h>\n",
    "hdr.h": "#include <winternl.h>\n",
    "nontdef.c": "/* FILE_RENAME_INFORMATION in a comment */\nint c = FileDirectoryInformation;\n",
    "ntype.c": "BY_HANDLE_FILE_INFORMATION bi; const char *s = \"FileRenameInformation\";\n",
    "tls.c": "#if defined(_MSC_VER)\n#define TL __declspec(thread)\n#else\n#define TL _Thread_local\n#endif\n",
    "attr.c": "#if defined(__GNUC__)\nvoid f(void) __attribute__((noreturn));\n#endif\nstruct s x = {0};\n",
    "posix.c": "#ifndef _MSC_VER\n#include <unistd.h>\n#endif\nint strndup_count;\n",
    "atomic.c": "#include <stdatomic.h>\n",
}
# (file the finding names, rule); via.c's <security.h> is reported where
# hdr.h then includes <winternl.h>.
EXPECT = {"order.c": "ntsecapi-order", "hdr.h": "ntsecapi-order",
          "nontdef.c": "ntsecapi-order", "ntype.c": "sdk-nt-type",
          "tls.c": "thread-local", "attr.c": "gnu-extension",
          "posix.c": "posix", "atomic.c": "c11atomics"}


def write_tree(d, files, atomics):
    os.makedirs(os.path.join(d, VS_DIR), exist_ok=True)
    for name, text in files.items():
        open(os.path.join(d, name), "w").write(text)
    items = "".join(f'<ClCompile Include="$(PxRoot){n}" />' for n in files if n.endswith(".c"))
    opt = "<AdditionalOptions>/experimental:c11atomics</AdditionalOptions>" if atomics else ""
    open(os.path.join(d, VS_DIR, "t.vcxproj"), "w").write(
        '<Project xmlns="http://schemas.microsoft.com/developer/msbuild/2003">'
        f'<ItemGroup>{items}</ItemGroup><ItemDefinitionGroup><ClCompile>{opt}'
        '</ClCompile></ItemDefinitionGroup></Project>')


def selftest(d):
    import io
    import contextlib
    ok = True
    bad, good = os.path.join(d, "bad"), os.path.join(d, "good")
    write_tree(bad, SELFTEST_BAD, False)
    write_tree(good, SELFTEST_GOOD, True)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc_bad = check(bad)
    out = buf.getvalue()
    for f, rule in EXPECT.items():
        if not re.search(rf'^{re.escape(f)}:\d+: {rule}:', out, re.M):
            print(f"selftest: expected {rule} in {f}; got:\n{out}")
            ok = False
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc_good = check(good)
    if rc_bad != 1 or rc_good != 0:
        print(f"selftest: exit codes bad={rc_bad} (want 1) good={rc_good} (want 0)\n{buf.getvalue()}")
        ok = False
    print("check-msvc selftest:", "ok" if ok else "FAILED")
    return 0 if ok else 1


def main(argv):
    if len(argv) == 3 and argv[1] == "--selftest":
        return selftest(argv[2])
    if len(argv) != 1:
        print(__doc__)
        return 2
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    return check(root)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
