/* audit_rules.c - the shipped audit rule sets for python, powershell, cmd
 * and sh. Each covers registry changes, network access, file deletion,
 * process creation and privilege changes with realistic tokens. They are
 * tripwires for the obvious (docs/audit.md), tuned so a finding is worth a
 * human look; `audit.rules.<set>` in the config replaces a set whole.
 */
#include "px/px_audit.h"

#include <string.h>

#define I PX_SEV_INFO
#define L PX_SEV_LOW
#define M PX_SEV_MEDIUM
#define H PX_SEV_HIGH
#define C PX_SEV_CRITICAL

static const px_audit_default_rule_t python_rules[] = {
    {"py.winreg", H, "\\bwinreg\\b", "Windows registry access (winreg)"},
    {"py.socket", M, "\\bsocket\\b", "raw network sockets (socket)"},
    {"py.http", M, "\\burllib", "HTTP client (urllib)"},
    {"py.requests", M, "\\brequests\\b", "HTTP client (requests)"},
    {"py.http_client", M, "\\bhttp.client\\b", "HTTP client (http.client)"},
    {"py.os_remove", M, "\\bos.remove\\b", "file deletion (os.remove)"},
    {"py.os_unlink", M, "\\bos.unlink\\b", "file deletion (os.unlink)"},
    {"py.path_unlink", M, ".unlink(", "file deletion (Path.unlink)"},
    {"py.rmtree", H, "\\bshutil.rmtree\\b", "recursive deletion (rmtree)"},
    {"py.rmdir", L, "\\bos.rmdir\\b", "directory deletion (os.rmdir)"},
    {"py.subprocess", H, "\\bsubprocess\\b", "process creation (subprocess)"},
    {"py.os_system", H, "\\bos.system\\b", "shell command (os.system)"},
    {"py.os_popen", H, "\\bos.popen\\b", "shell command (os.popen)"},
    {"py.os_exec", H, "\\bos.exec", "process replacement (os.exec*)"},
    {"py.os_spawn", H, "\\bos.spawn", "process creation (os.spawn*)"},
    {"py.fork", M, "\\bos.fork\\b", "process creation (os.fork)"},
    {"py.pty", H, "\\bpty.spawn\\b", "interactive shell (pty.spawn)"},
    {"py.kill", M, "\\bos.kill\\b", "signals other processes (os.kill)"},
    {"py.setuid", H, "\\bos.setuid\\b", "identity change (os.setuid)"},
    {"py.setgid", H, "\\bos.setgid\\b", "identity change (os.setgid)"},
    {"py.chmod", L, "\\bos.chmod\\b", "permission change (os.chmod)"},
    {"py.chown", M, "\\bos.chown\\b", "ownership change (os.chown)"},
    {"py.ctypes", M, "\\bctypes\\b", "native calls (ctypes)"},
    {"py.sudo", H, "\\bsudo\\b", "privilege elevation (sudo)"},
    {"py.dyn_import", M, "__import__(", "dynamic import (__import__)"},
    {"py.eval", L, "\\beval(", "dynamic code (eval)"},
    {"py.exec", L, "\\bexec(", "dynamic code (exec)"},
};

static const px_audit_default_rule_t powershell_rules[] = {
    {"ps.hklm", H, "HKLM:", "machine registry (HKLM:)"},
    {"ps.hkcu", M, "HKCU:", "user registry (HKCU:)"},
    {"ps.registry", H, "Registry::", "registry provider (Registry::)"},
    {"ps.reg_add", H, "\\breg add\\b", "registry change (reg add)"},
    {"ps.reg_delete", H, "\\breg delete\\b", "registry deletion (reg delete)"},
    {"ps.item_property", M, "\\bNew-ItemProperty\\b",
     "registry or item property creation"},
    {"ps.sockets", H, "New-Object*Net.Sockets", "raw sockets (Net.Sockets)"},
    {"ps.webclient", M, "Net.WebClient", "HTTP client (Net.WebClient)"},
    {"ps.iwr", M, "\\bInvoke-WebRequest\\b", "HTTP client (Invoke-WebRequest)"},
    {"ps.irm", M, "\\bInvoke-RestMethod\\b", "HTTP client (Invoke-RestMethod)"},
    {"ps.bits", M, "\\bStart-BitsTransfer\\b", "download (BITS)"},
    {"ps.remove_item", M, "\\bRemove-Item\\b", "file deletion (Remove-Item)"},
    {"ps.remove_recurse", H, "\\bRemove-Item\\b*-Recurse",
     "recursive deletion (Remove-Item -Recurse)"},
    {"ps.format_volume", C, "\\bFormat-Volume\\b", "disk format"},
    {"ps.start_process", H, "\\bStart-Process\\b",
     "process creation (Start-Process)"},
    {"ps.process_class", H, "Diagnostics.Process",
     "process creation (System.Diagnostics.Process)"},
    {"ps.iex", H, "\\bInvoke-Expression\\b",
     "dynamic code (Invoke-Expression)"},
    {"ps.iex_alias", H, "\\biex\\b", "dynamic code (iex)"},
    {"ps.invoke_command", H, "\\bInvoke-Command\\b",
     "remote or script-block execution (Invoke-Command)"},
    {"ps.wmi", H, "\\bInvoke-WmiMethod\\b", "process creation through WMI"},
    {"ps.cim", H, "\\bInvoke-CimMethod\\b", "process creation through CIM"},
    {"ps.stop_process", M, "\\bStop-Process\\b", "kills processes"},
    {"ps.runas", C, "-Verb*\\bRunAs\\b", "elevation prompt (-Verb RunAs)"},
    {"ps.exec_policy", H, "\\bSet-ExecutionPolicy\\b",
     "execution policy change"},
    {"ps.local_user", C, "\\bNew-LocalUser\\b", "account creation"},
    {"ps.local_group", C, "\\bAdd-LocalGroupMember\\b",
     "group membership change"},
    {"ps.acl", H, "\\bSet-Acl\\b", "permission change (Set-Acl)"},
    {"ps.defender", C, "-MpPreference\\b", "Defender settings change"},
    {"ps.encoded", H, "-EncodedCommand", "encoded command (obfuscation)"},
};

static const px_audit_default_rule_t cmd_rules[] = {
    {"cmd.reg_add", H, "\\breg\\b*\\badd\\b", "registry change (reg add)"},
    {"cmd.reg_delete", H, "\\breg\\b*\\bdelete\\b",
     "registry deletion (reg delete)"},
    {"cmd.reg_import", H, "\\breg\\b*\\bimport\\b",
     "registry import (reg import)"},
    {"cmd.regedit", H, "\\bregedit\\b", "registry editor"},
    {"cmd.curl", M, "\\bcurl\\b", "network transfer (curl)"},
    {"cmd.bitsadmin", H, "\\bbitsadmin\\b", "download (bitsadmin)"},
    {"cmd.certutil", H, "\\bcertutil\\b*-urlcache",
     "download (certutil -urlcache)"},
    {"cmd.ftp", M, "\\bftp\\b", "network transfer (ftp)"},
    {"cmd.netsh", H, "\\bnetsh\\b", "network or firewall configuration"},
    {"cmd.del", M, "\\bdel\\b", "file deletion (del)"},
    {"cmd.erase", M, "\\berase\\b", "file deletion (erase)"},
    {"cmd.rd", H, "\\brd\\b*/s", "recursive deletion (rd /s)"},
    {"cmd.rmdir", H, "\\brmdir\\b*/s", "recursive deletion (rmdir /s)"},
    {"cmd.format", C, "\\bformat\\b*?:", "disk format"},
    {"cmd.start", L, "\\bstart\\b", "process creation (start)"},
    {"cmd.powershell", M, "\\bpowershell\\b", "nested PowerShell"},
    {"cmd.wmic", H, "\\bwmic\\b", "process creation or queries (wmic)"},
    {"cmd.schtasks", H, "\\bschtasks\\b", "scheduled task (persistence)"},
    {"cmd.sc", H, "\\bsc\\b*\\bcreate\\b", "service creation (sc create)"},
    {"cmd.taskkill", M, "\\btaskkill\\b", "kills processes"},
    {"cmd.runas", C, "\\brunas\\b", "run as another user"},
    {"cmd.net_user", C, "\\bnet\\b*\\buser\\b", "account change (net user)"},
    {"cmd.net_localgroup", C, "\\bnet\\b*\\blocalgroup\\b",
     "group membership change"},
    {"cmd.icacls", H, "\\bicacls\\b", "permission change (icacls)"},
    {"cmd.takeown", H, "\\btakeown\\b", "ownership change (takeown)"},
};

static const px_audit_default_rule_t sh_rules[] = {
    {"sh.curl", M, "\\bcurl\\b", "network transfer (curl)"},
    {"sh.wget", M, "\\bwget\\b", "network transfer (wget)"},
    {"sh.nc", H, "\\bnc\\b", "raw network connection (nc)"},
    {"sh.ncat", H, "\\bncat\\b", "raw network connection (ncat)"},
    {"sh.socat", H, "\\bsocat\\b", "raw network connection (socat)"},
    {"sh.dev_tcp", H, "/dev/tcp/", "bash network redirection (/dev/tcp)"},
    {"sh.ssh", M, "\\bssh\\b", "remote shell (ssh)"},
    {"sh.rm_r", H, "\\brm -r", "recursive deletion (rm -r, rm -rf)"},
    {"sh.rm_fr", H, "\\brm -fr", "recursive deletion (rm -fr)"},
    {"sh.rm_recursive", H, "\\brm\\b*--recursive",
     "recursive deletion (rm --recursive)"},
    {"sh.rm", M, "\\brm\\b", "file deletion (rm)"},
    {"sh.shred", H, "\\bshred\\b", "destructive overwrite (shred)"},
    {"sh.dd", H, "\\bdd\\b*\\bof=", "raw write (dd of=)"},
    {"sh.mkfs", C, "\\bmkfs", "filesystem creation (mkfs)"},
    {"sh.find_delete", H, "\\bfind\\b*-delete\\b",
     "bulk deletion (find "
     "-delete)"},
    {"sh.nohup", M, "\\bnohup\\b", "detached process (nohup)"},
    {"sh.setsid", M, "\\bsetsid\\b", "detached process (setsid)"},
    {"sh.eval", M, "\\beval\\b", "dynamic code (eval)"},
    {"sh.crontab", H, "\\bcrontab\\b", "scheduled job (persistence)"},
    {"sh.kill", M, "\\bkill\\b", "signals other processes (kill)"},
    {"sh.sudo", H, "\\bsudo\\b", "privilege elevation (sudo)"},
    {"sh.su", H, "\\bsu\\b", "identity change (su)"},
    {"sh.chmod", L, "\\bchmod\\b", "permission change (chmod)"},
    {"sh.setuid_bit", C, "\\bchmod\\b*+s\\b", "setuid/setgid bit (chmod +s)"},
    {"sh.setuid_octal", C, "\\bchmod\\b*\\b4???\\b", "setuid bit (chmod 4xxx)"},
    {"sh.chown", M, "\\bchown\\b", "ownership change (chown)"},
    {"sh.setcap", C, "\\bsetcap\\b", "file capabilities (setcap)"},
    {"sh.passwd", H, "/etc/passwd", "account database (/etc/passwd)"},
    {"sh.shadow", C, "/etc/shadow", "password hashes (/etc/shadow)"},
    {"sh.mount", H, "\\bmount\\b", "mount"},
    {"sh.insmod", C, "\\binsmod\\b", "kernel module load (insmod)"},
    {"sh.modprobe", C, "\\bmodprobe\\b", "kernel module load (modprobe)"},
};

static const struct {
  const char *name;
  const px_audit_default_rule_t *rules;
  size_t n;
} sets[] = {
#define SET(name, arr)                                                         \
  { name, arr, sizeof arr / sizeof arr[0] }
    SET("python", python_rules),
    SET("powershell", powershell_rules),
    SET("cmd", cmd_rules),
    SET("sh", sh_rules),
#undef SET
};

static const char *const set_names[] = {"python", "powershell", "cmd", "sh"};

size_t px_audit_default_sets(const char *const **names) {
  *names = set_names;
  return sizeof sets / sizeof sets[0];
}

const px_audit_default_rule_t *px_audit_default_rules(const char *name,
                                                      size_t *n) {
  size_t i;
  for (i = 0; name && i < sizeof sets / sizeof sets[0]; i++)
    if (strcmp(sets[i].name, name) == 0) {
      *n = sets[i].n;
      return sets[i].rules;
    }
  *n = 0;
  return NULL;
}
