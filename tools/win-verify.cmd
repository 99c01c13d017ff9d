@echo off
rem win-verify.cmd - the whole Windows enforcement proof in one command
rem (docs/windows-verification.md). Run from an elevated prompt, in an
rem interactive session, on a test machine:
rem
rem   win-verify.cmd [MSI] [TESTS_DIR] [OUT_DIR]
rem
rem   MSI        PhoenixExecutor.msi of the release (default: beside this
rem              script, or ..\installer\PhoenixExecutor.msi of a build tree)
rem   TESTS_DIR  the folder with px_tests_win.exe and px_probe.exe
rem              (default: this script's folder)
rem   OUT_DIR    where the report goes (default: %TEMP%\px-verify)
rem
rem Steps: install the MSI (msiexec /i /qn, verbose log), check the service
rem is registered and RUNNING as LocalSystem, run the win-enforce suite
rem against the installed service only (enforce-svc with
rem PX_SVC_INSTALLED=1), export the service's Event Log entries (wevtutil
rem epl), uninstall the MSI and check the service is gone. Everything lands
rem in OUT_DIR; send back that folder (zip it).
rem
rem Only the installed service runs jobs here. The backend groups (enforce,
rem adversarial-enforce) create jobs in-process or from a console server:
rem from this elevated prompt that is an Administrators token, which has no
rem SeTcbPrivilege, so the S4U logon of the job account (LsaLogonUser,
rem MsV1_0S4ULogon) cannot give a usable token and every job would error.
rem The service runs as LocalSystem, which holds SeTcbPrivilege.
rem
rem Exit status: 0 every check passed, 1 a check failed (see report.txt)
rem or a group ran nothing (every test SKIPped: that proves nothing and
rem fails), 2 the verification could not run (not elevated, no MSI,
rem install failed).
rem A batch file, not PowerShell: an admin can read all of it before running
rem it elevated, and Wine's cmd runs it too, so ctest tests it under Wine
rem (win.verify_script) as far as Wine goes.
setlocal enableextensions
set "HERE=%~dp0"
set "MSI=%~1"
set "TESTS=%~2"
set "OUT=%~3"
if "%MSI%"=="" if exist "%HERE%PhoenixExecutor.msi" set "MSI=%HERE%PhoenixExecutor.msi"
if "%MSI%"=="" if exist "%HERE%..\installer\PhoenixExecutor.msi" set "MSI=%HERE%..\installer\PhoenixExecutor.msi"
if "%TESTS%"=="" set "TESTS=%HERE%"
if "%OUT%"=="" set "OUT=%TEMP%\px-verify"
set "RC=0"
rem win-verify.cmd --verdict-selftest STATUS: the group verdict of a test
rem run that exited STATUS, printed; exit 0 pass, 1 fail (tests of this
rem script: tests/win/win_verify_test.sh).
if "%~1"=="--verdict-selftest" goto verdict_selftest
set "WINE=0"
reg query "HKCU\Software\Wine" >nul 2>&1 && set "WINE=1"

echo PhoenixExecutor Windows verification
echo   MSI    %MSI%
echo   tests  %TESTS%
echo   report %OUT%
if not exist "%MSI%" goto no_msi
if not exist "%TESTS%\px_tests_win.exe" goto no_tests
if not exist "%TESTS%\px_probe.exe" goto no_tests
net session >nul 2>&1
if errorlevel 1 goto not_admin
sc query PhoenixExecutor >nul 2>&1
if not errorlevel 1 goto already_installed
if not exist "%OUT%" mkdir "%OUT%"
del /q "%OUT%\*.txt" "%OUT%\*.log" "%OUT%\*.evtx" >nul 2>&1
ver > "%OUT%\system.txt"
echo wine=%WINE% >> "%OUT%\system.txt"
whoami /all >> "%OUT%\system.txt" 2>&1

echo [1/4] installing the MSI
msiexec /i "%MSI%" /qn /l*v "%OUT%\msi-install.log"
rem 3010 and 1641 are successes that want a restart (Windows Installer
rem error codes): only another non-zero code is a failed install.
set "MSIRC=%errorlevel%"
if not "%MSIRC%"=="0" if not "%MSIRC%"=="3010" if not "%MSIRC%"=="1641" goto install_failed
sc query PhoenixExecutor > "%OUT%\service-after-install.txt" 2>&1
if errorlevel 1 goto install_failed
rem sc query exits 0 for a stopped service too: RUNNING is what counts
rem (that it runs as LocalSystem, the suite checks from its token).
findstr /c:"RUNNING" "%OUT%\service-after-install.txt" >nul
if errorlevel 1 goto install_failed
reg query "HKLM\SYSTEM\CurrentControlSet\Services\PhoenixExecutor" >> "%OUT%\service-after-install.txt" 2>&1

echo [2/4] the suite against the installed service (enforce-svc)
set "PX_SVC_INSTALLED=1"
set "PX_ENFORCE_REPORT=%OUT%\report.txt"
"%TESTS%\px_tests_win.exe" --group enforce-svc > "%OUT%\enforce-svc.txt" 2>&1
call :verdict enforce-svc %errorlevel%
set "PX_SVC_INSTALLED="

echo [3/4] the Event Log (Application, source PhoenixExecutor)
wevtutil epl Application "%OUT%\events.evtx" "/q:*[System[Provider[@Name='PhoenixExecutor']]]" > "%OUT%\wevtutil.txt" 2>&1
wevtutil qe Application "/q:*[System[Provider[@Name='PhoenixExecutor']]]" /f:text /c:300 > "%OUT%\events.txt" 2>&1
if not exist "%OUT%\events.evtx" echo   no events.evtx: wevtutil exported nothing, see wevtutil.txt

echo [4/4] uninstalling the MSI
msiexec /x "%MSI%" /qn /l*v "%OUT%\msi-uninstall.log"
if errorlevel 1 call :note uninstall "msiexec /x failed, see msi-uninstall.log"
sc query PhoenixExecutor > "%OUT%\service-after-uninstall.txt" 2>&1
if not errorlevel 1 call :note uninstall "the service is still registered after msiexec /x"

echo.
rem the one-screen report: counts per class and every row not ok; the
rem whole table is report.txt
"%TESTS%\px_tests_win.exe" enforcesvc_report > "%OUT%\report-screen.txt" 2>&1
type "%OUT%\report-screen.txt"
echo.
type "%OUT%\summary.txt"
if "%RC%"=="0" echo RESULT: PASS - every check passed. Send back %OUT% all the same.
if not "%RC%"=="0" echo RESULT: FAIL - zip the folder %OUT% and send it back.
if "%WINE%"=="1" echo NOTE: under Wine nothing is enforced; the suite SKIPs what Wine cannot show.
exit /b %RC%

rem ---- group verdicts: 0 pass; 77 every test skipped: nothing was
rem ---- verified, a failure; anything else: failures ----
:verdict
if "%2"=="0" echo %1: passed>> "%OUT%\summary.txt"
if "%2"=="0" goto :eof
if "%2"=="77" echo %1: FAILED - every test SKIPped, nothing was verified, see %1.txt>> "%OUT%\summary.txt"
if not "%2"=="77" echo %1: FAILED with exit %2, see %1.txt>> "%OUT%\summary.txt"
set "RC=1"
goto :eof

:verdict_selftest
set "OUT=%TEMP%"
del /q "%OUT%\summary.txt" >nul 2>&1
call :verdict selftest %~2
type "%OUT%\summary.txt"
del /q "%OUT%\summary.txt" >nul 2>&1
exit /b %RC%

:note
echo %1: FAILED - %~2>> "%OUT%\summary.txt"
echo   %~2
set "RC=1"
goto :eof

:no_msi
echo ERROR: no MSI at "%MSI%" - give its path as the first argument
exit /b 2
:no_tests
echo ERROR: px_tests_win.exe and px_probe.exe are not in "%TESTS%"
exit /b 2
:not_admin
echo ERROR: run this from an elevated Administrator command prompt
exit /b 2
:already_installed
echo ERROR: a PhoenixExecutor service is already installed here; uninstall it
echo        first: this script installs and removes its own copy
exit /b 2
:install_failed
echo ERROR: the MSI did not install, see %OUT%\msi-install.log
msiexec /x "%MSI%" /qn >nul 2>&1
exit /b 2
