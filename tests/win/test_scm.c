/* test_scm.c - the service's token as the SCM builds it (service/win/scm.c):
 * the required privileges and the unrestricted service SID written and
 * read back from the SCM, and install failing whole when they cannot be
 * set (through the PXW() seam). What the token then holds only Windows
 * shows (`sc qprivs PhoenixExecutor`; docs/windows-service.md). */
#include "task.h"

#include "px/px_error.h"
#include "px/px_fault.h"
#include "service/win/daemon.h"
#include "px/px_winapi.h"

#include <windows.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#define NAME L"PxScmHardenTest"

static SC_HANDLE create_dummy(SC_HANDLE scm) {
  WCHAR exe[MAX_PATH];
  GetModuleFileNameW(NULL, exe, MAX_PATH);
  return CreateServiceW(scm, NAME, NAME, SERVICE_ALL_ACCESS, SERVICE_WIN32_OWN_PROCESS,
                        SERVICE_DEMAND_START, SERVICE_ERROR_NORMAL, exe, NULL, NULL,
                        NULL, NULL, NULL);
}

TEST_IMPL(scm_harden_readback) {
  SC_HANDLE scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_ALL_ACCESS), svc;
  BYTE buf[4096];
  DWORD need = 0, i;
  const WCHAR *p;
  ASSERT(scm != NULL);
  svc = OpenServiceW(scm, NAME, DELETE);
  if (svc) { /* a previous failed run */
    DeleteService(svc);
    CloseServiceHandle(svc);
  }
  svc = create_dummy(scm);
  ASSERT(svc != NULL);
  ASSERT_OK(px_scm_harden(svc));
  /* Read back what the SCM stored (Wine 8's knows neither level). */
  if (!QueryServiceConfig2W(svc, SERVICE_CONFIG_REQUIRED_PRIVILEGES_INFO, buf,
                            sizeof buf, &need)) {
    ASSERT(px_test_under_wine());
    ASSERT_EQ(GetLastError(), ERROR_INVALID_LEVEL);
    printf("Wine's SCM: required privileges not stored (ERROR_INVALID_LEVEL)\n");
    goto faults;
  }
  p = ((SERVICE_REQUIRED_PRIVILEGES_INFOW *)(void *)buf)->pmszRequiredPrivileges;
  ASSERT(p != NULL);
  for (i = 0; px_scm_required_privileges[i]; i++, p += wcslen(p) + 1) {
    if (wcscmp(p, px_scm_required_privileges[i]) != 0)
      px__test_fail(__FILE__, __LINE__, "privilege %lu: %ls vs %ls",
                    (unsigned long)i, p, px_scm_required_privileges[i]);
  }
  ASSERT(*p == 0);
  ASSERT(QueryServiceConfig2W(svc, SERVICE_CONFIG_SERVICE_SID_INFO, buf, sizeof buf,
                              &need));
  ASSERT_EQ(((SERVICE_SID_INFO *)(void *)buf)->dwServiceSidType,
            SERVICE_SID_TYPE_UNRESTRICTED);
faults:
  /* Each call failing fails the whole. */
  ASSERT_OK(px_fault_arm("winapi.ChangeServiceConfig2W", 1,
                         ERROR_ACCESS_DENIED));
  ASSERT_EQ(px_scm_harden(svc), PX_EOS);
  ASSERT_OK(px_fault_arm("winapi.ChangeServiceConfig2W", 2,
                         ERROR_ACCESS_DENIED));
  ASSERT_EQ(px_scm_harden(svc), PX_EOS);
  px_fault_reset();
  ASSERT(DeleteService(svc));
  CloseServiceHandle(svc);
  CloseServiceHandle(scm);
  return 0;
}

/* `PhoenixExecutor install` is all or nothing: a service whose token
 * cannot be restricted is not left installed. */
TEST_IMPL(scm_install_fails_whole) {
  px_scm_install_t in;
  WCHAR exe[MAX_PATH];
  SC_HANDLE scm, svc;
  GetModuleFileNameW(NULL, exe, MAX_PATH);
  memset(&in, 0, sizeof in);
  in.name = NAME;
  in.display = NAME;
  in.exe_path = exe;
  px_scm_uninstall(NAME);
  ASSERT_OK(px_fault_arm("winapi.ChangeServiceConfig2W", 1,
                         ERROR_ACCESS_DENIED));
  ASSERT_EQ(px_scm_install(&in), PX_EOS);
  px_fault_reset();
  scm = OpenSCManagerW(NULL, NULL, SC_MANAGER_CONNECT);
  ASSERT(scm != NULL);
  svc = OpenServiceW(scm, NAME, SERVICE_QUERY_STATUS);
  ASSERT(svc == NULL); /* deleted again */
  CloseServiceHandle(scm);
  ASSERT_OK(px_scm_install(&in)); /* positive control */
  ASSERT_OK(px_scm_uninstall(NAME));
  return 0;
}
