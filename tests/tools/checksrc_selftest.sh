#!/usr/bin/env bash
# checksrc_selftest.sh - tools/checksrc must flag each rule and pass clean
# code; run by ctest (tools.checksrc_selftest) and on the real tree by
# tools.checksrc.
set -eu
checksrc=$(cd "$(dirname "$0")/../.." && pwd)/tools/checksrc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
git init -q .
mkdir -p service/linux
printf 'int f(char *d) { return snprintf(d, 4, "x"); }\n' > service/ok.c
printf '#include <unistd.h>\n' > service/linux/ok.c
git add -A
"$checksrc" >/dev/null || { echo "FAIL: clean tree flagged"; exit 1; }

expect_flag() { # file content rule
    printf '%s\n' "$2" > "$1"
    git add -A
    if out=$("$checksrc"); then
        echo "FAIL: not flagged: $2"; exit 1
    fi
    case "$out" in *"$3"*) ;; *) echo "FAIL: wrong rule for $2: $out"; exit 1 ;; esac
    git rm -qf "$1"
}
expect_flag service/a.c 'void f(char *d) { strcpy(d, "x"); }' "banned call"
expect_flag service/b.c 'int n(const char *s) { return atoi(s); }' "banned call"
expect_flag service/c.c 'void g(int p) { kill(p, 9); }' "process control"
expect_flag service/d.c 'void h(void) { CreateProcessW(0); }' "process control"
expect_flag service/e.c '#include <windows.h>' "OS header"
mkdir -p base
expect_flag base/h.c '#include "service/engine/engine_int.h"' "base/ includes only"
# 7. A layer's private includes: its own folder only, not a nested layer's,
# never climbing (the compiler would accept each of these).
mkdir -p service/engine service/win config/linux
printf '/* private */\n' > service/engine/queue.h
printf '/* private */\n' > service/conn.h
printf '/* private */\n' > config/config_int.h
expect_flag service/i.c '#include "engine/queue.h"' "reaches into another layer (service/engine/)"
expect_flag service/win/j.c '#include "../../config/config_int.h"' "climbs with .."
expect_flag config/k.c '#include "service/conn.h"' "not in the layer's folder (config/)"
# 8. One symbol prefix per library:
expect_flag service/engine/l.c 'int px__job_count(void);' "a private symbol of service/engine/ is px__engine_..."
mkdir -p kb
expect_flag kb/m.c 'int px__kbfs_open(void);' "a private symbol of kb/ is px__kb_..."
printf 'int px__engine_job_count(void);\n' > service/engine/n.c
# 9. One UTF-16 converter:
mkdir -p service/win
expect_flag service/win/o.c 'void f(void) { MultiByteToWideChar(65001, 0, "", -1, 0, 0); }' "UTF-16 conversion outside base/win/wide.c"
# Comments, strings and member calls are not calls to the OS:
printf '/* kill(p) */ void f(struct o *ops) { ops->kill(0); puts("strcpy("); }\n' > service/g.c
# Allowed places and the opt-out marker:
printf 'void g(int p) { kill(p, 9); }\n' > service/linux/spawn.c
mkdir -p base
printf '#include "px/px_error.h"\n#include <string.h>\n' > base/ok.c
mkdir -p base/win
printf 'void f(void) { WideCharToMultiByte(65001, 0, 0, -1, 0, 0, 0, 0); }\n' > base/win/wide.c
printf 'void f(char *d) { strcpy(d, "x"); } /* checksrc: allow - test */\n' > service/f.c
# A layer's own private headers, from its subfolders too:
mkdir -p service/win config/linux
printf '#include "conn.h"\n' > service/win/pipe.c
printf '#include "config_int.h"\n' > config/linux/platform.c
printf '#include "queue.h"\n' > service/engine/queue.c
git add -A
"$checksrc" >/dev/null || { echo "FAIL: allowed code flagged"; "$checksrc"; exit 1; }
echo "checksrc selftest: ok"
