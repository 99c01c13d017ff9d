/* group.c - the local group whose members may submit work over the
 * service's pipe ("PhoenixExecutor Users" by default,
 * transports.pipe_client_group).
 *
 * DESIGN: the pipe used to admit BUILTIN\Users, i.e. every local and RDP
 * user. Now its DACL grants SYSTEM, Administrators and one dedicated local
 * group, empty when created: an administrator adds the accounts of the
 * agents that may run code (`net localgroup "PhoenixExecutor Users"
 * AGENT /add`). `PhoenixExecutor.exe install` creates the group,
 * `uninstall` deletes it, and every start creates it if it is missing (an
 * MSI install registers the service without running `install`), so the
 * name always resolves to a group this machine controls.
 *
 * Resolution is strict: a bare name must resolve to an alias (a local
 * group) of this computer or of BUILTIN, never to a same-named domain
 * group that LookupAccountNameW would otherwise find when the local one is
 * missing; "DOMAIN\name" is taken as the administrator wrote it (any
 * group type).
 *
 * Wine: NetLocalGroupAdd and NetLocalGroupDel are stubs that succeed and
 * create nothing, so the name never resolves (PX_ENOTSUP, said once).
 */
#include "win/daemon.h"

#include "px/px_error.h"
#include "px/px_events.h"
#include "px/px_log.h"
#include "px/px_os.h"
#include "px/px_util.h"
#include "px/px_win_error.h"

#include <windows.h>
#include <lm.h>
#include <sddl.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define COMMENT L"Accounts allowed to submit jobs to the PhoenixExecutor service (its named pipe)"

/* 1 when the resolved account is acceptable for `name`. */
static int acceptable(const WCHAR *name, SID_NAME_USE use, const WCHAR *domain) {
  WCHAR host[MAX_COMPUTERNAME_LENGTH + 1];
  DWORD n = MAX_COMPUTERNAME_LENGTH + 1;
  if (wcschr(name, L'\\')) /* qualified by the administrator */
    return use == SidTypeAlias || use == SidTypeGroup || use == SidTypeWellKnownGroup;
  if (use != SidTypeAlias)
    return 0;
  if (!_wcsicmp(domain, L"BUILTIN"))
    return 1;
  return GetComputerNameW(host, &n) && !_wcsicmp(domain, host);
}

/* name -> SID string; PX_ENOENT when no acceptable group has that name. */
static int lookup(const WCHAR *name, char *out, size_t outsz) {
  BYTE sid[SECURITY_MAX_SID_SIZE];
  WCHAR domain[256];
  DWORD sidsz = sizeof sid, domsz = 256;
  SID_NAME_USE use;
  LPWSTR str = NULL;
  size_t i;
  if (!LookupAccountNameW(NULL, name, sid, &sidsz, domain, &domsz, &use))
    return GetLastError() == ERROR_NONE_MAPPED ? PX_ENOENT
                                               : PX_LOG_WIN32(PX_EOS, GetLastError(),
                                                              "LookupAccountNameW");
  if (!acceptable(name, use, domain))
    return PX_ENOENT;
  if (!ConvertSidToStringSidW(sid, &str))
    return PX_LOG_WIN32(PX_EOS, GetLastError(), "ConvertSidToStringSidW");
  for (i = 0; str[i] && i + 1 < outsz; i++)
    out[i] = (char)str[i]; /* SID strings are ASCII */
  out[i] = '\0';
  i = str[i] != 0;
  LocalFree(str);
  return i ? PX_ERANGE : 0;
}

static int group_add(const WCHAR *name) {
  LOCALGROUP_INFO_1 info;
  NET_API_STATUS st;
  info.lgrpi1_name = (LPWSTR)name;
  info.lgrpi1_comment = (LPWSTR)COMMENT;
  st = NetLocalGroupAdd(NULL, 1, (LPBYTE)&info, NULL);
  if (st == NERR_Success || st == ERROR_ALIAS_EXISTS || st == NERR_GroupExists)
    return 0;
  return PX_LOG_WIN32(st == ERROR_ACCESS_DENIED ? PX_EACCES : PX_EOS, st,
                      "NetLocalGroupAdd");
}

int px_win_clients_group_create(const char *name) {
  WCHAR *w = px_win_wide(name ? name : PX_CLIENTS_GROUP_DEFAULT, PX_WIDE_REPLACE, NULL);
  char sid[192];
  int rc;
  if (!w)
    return PX_ENOMEM;
  rc = group_add(w);
  if (rc == 0 && (rc = lookup(w, sid, sizeof sid)) == PX_ENOENT)
    rc = px_os_under_wine() ? PX_ENOTSUP : PX_EOS; /* created, yet not there */
  free(w);
  return rc;
}

int px_win_clients_group_delete(const char *name) {
  WCHAR *w = px_win_wide(name ? name : PX_CLIENTS_GROUP_DEFAULT, PX_WIDE_REPLACE, NULL);
  NET_API_STATUS st;
  if (!w)
    return PX_ENOMEM;
  st = NetLocalGroupDel(NULL, w);
  free(w);
  if (st == NERR_Success)
    return 0;
  if (st == ERROR_NO_SUCH_ALIAS || st == NERR_GroupNotFound)
    return PX_ENOENT;
  return PX_LOG_WIN32(st == ERROR_ACCESS_DENIED ? PX_EACCES : PX_EOS, st,
                      "NetLocalGroupDel");
}

int px_win_clients_group_sid(const char *name, int create, char *out,
                             size_t outsz) {
  WCHAR *w = px_win_wide(name, PX_WIDE_REPLACE, NULL);
  int rc;
  if (!w)
    return PX_ENOMEM;
  rc = lookup(w, out, outsz);
  if (rc == PX_ENOENT && create && group_add(w) == 0) {
    rc = lookup(w, out, outsz);
    if (rc == 0)
      PX_LOG(PX_LOG_WARN, "created the missing local group \"%s\" (empty: add "
                          "the accounts that may submit jobs)", name);
  }
  free(w);
  if (rc == PX_ENOENT && px_os_under_wine())
    return PX_ENOTSUP;
  return rc;
}
