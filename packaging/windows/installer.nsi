; The Windows installer of cflow studio (NSIS 3, Debian's `nsis`), made by packaging/windows/build.sh:
;   makensis -DVERSION=X.Y.Z -DSTAGE=<staged tree> -DFILES=<dir with files.nsh, unfiles.nsh> -DOUTFILE=<setup.exe> installer.nsi
; STAGE holds the tree the installer copies into $INSTDIR: bin\ (both executables, the Qt and mingw
; runtime DLLs and Qt's plugins) and share\cflow-studio\ (the bundled models), the layout the programs
; search from their own folder (engine/include/cflow/engine/install/default_model.h), as on Linux.
; build.sh writes files.nsh / unfiles.nsh from STAGE, so the uninstaller removes exactly what was
; installed and nothing a user put beside it. /S installs or uninstalls silently (the wine test).
; Optional (on by default, so /S selects it): bin\ on the user's PATH (HKCU\Environment), taken
; off again on uninstall; the Start menu always gets a "cflow command prompt" with bin\ on its
; PATH, whichever was chosen.
; A 64-bit installer (Debian's nsis ships the amd64-unicode stubs): the app is x86-64 only, and a
; 32-bit installer would need wine32 to be tested here.
Target amd64-unicode
SetCompressor /SOLID lzma
!include "MUI2.nsh"
!include "x64.nsh"
!include "LogicLib.nsh"
!include "WinMessages.nsh"
!include "WordFunc.nsh"

!define APP_NAME "cflow studio"
!define APP_KEY "cflow-studio"
!define UNINSTALL_KEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\${APP_KEY}"
!define ENV_KEY "Environment"  ; under HKCU: the user's own variables
!define PROMPT_NAME "cflow command prompt"

Name "${APP_NAME} ${VERSION}"
OutFile "${OUTFILE}"
InstallDir "$PROGRAMFILES64\${APP_NAME}"
; An earlier install's folder is offered again (and replaced in place).
InstallDirRegKey HKLM "Software\${APP_KEY}" "InstallDir"
RequestExecutionLevel admin
BrandingText "${APP_NAME} ${VERSION}"
VIProductVersion "${VERSION}.0"
VIAddVersionKey "ProductName" "${APP_NAME}"
VIAddVersionKey "ProductVersion" "${VERSION}"
VIAddVersionKey "FileDescription" "${APP_NAME} installer"
VIAddVersionKey "FileVersion" "${VERSION}"
VIAddVersionKey "LegalCopyright" "cflow studio developers"

!define MUI_ABORTWARNING
; The app's own icon (cflow-studio.ico, app/studio/CMakeLists.txt) when build.sh found it.
!ifdef ICON
  !define MUI_ICON "${ICON}"
  !define MUI_UNICON "${ICON}"
!endif
!define MUI_FINISHPAGE_RUN "$INSTDIR\bin\cflow-studio.exe"
!define MUI_FINISHPAGE_RUN_TEXT "Start ${APP_NAME}"
!insertmacro MUI_PAGE_WELCOME
!insertmacro MUI_PAGE_COMPONENTS
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_PAGE_FINISH
!insertmacro MUI_UNPAGE_CONFIRM
!insertmacro MUI_UNPAGE_INSTFILES
!insertmacro MUI_LANGUAGE "English"

Function .onInit
  ${IfNot} ${RunningX64}
    MessageBox MB_ICONSTOP "${APP_NAME} needs 64-bit Windows." /SD IDOK
    Abort
  ${EndIf}
  ; 64-bit registry view and Program Files, whatever the installer's own bitness.
  SetRegView 64
FunctionEnd

Function un.onInit
  SetRegView 64
FunctionEnd

Section "${APP_NAME}" SecMain
  SectionIn RO
  SetShellVarContext all
  SetOutPath "$INSTDIR"
  !include "${FILES}\files.nsh"
  WriteUninstaller "$INSTDIR\uninstall.exe"

  CreateDirectory "$SMPROGRAMS\${APP_NAME}"
  CreateShortcut "$SMPROGRAMS\${APP_NAME}\${APP_NAME}.lnk" "$INSTDIR\bin\cflow-studio.exe"
  CreateShortcut "$SMPROGRAMS\${APP_NAME}\Uninstall ${APP_NAME}.lnk" "$INSTDIR\uninstall.exe"
  ; A console with bin\ on its PATH (whether or not the PATH component was chosen), opened in the
  ; user's home folder, saying what it is. cmd keeps the quotes of /K "file" (one quoted existing file).
  FileOpen $0 "$INSTDIR\bin\cflow-prompt.cmd" w
  FileWrite $0 "@echo off$\r$\n"
  FileWrite $0 "set $\"PATH=%~dp0;%PATH%$\"$\r$\n"
  FileWrite $0 "cd /d $\"%USERPROFILE%$\"$\r$\n"
  FileWrite $0 "echo ${PROMPT_NAME}: cflow.exe is on PATH in this window. Try: cflow --help$\r$\n"
  FileClose $0
  CreateShortcut "$SMPROGRAMS\${APP_NAME}\${PROMPT_NAME}.lnk" "$SYSDIR\cmd.exe" '/K "$INSTDIR\bin\cflow-prompt.cmd"' \
    "$SYSDIR\cmd.exe" 0 SW_SHOWNORMAL "" "A console where cflow.exe is on PATH"

  WriteRegStr HKLM "Software\${APP_KEY}" "InstallDir" "$INSTDIR"
  WriteRegStr HKLM "${UNINSTALL_KEY}" "DisplayName" "${APP_NAME}"
  WriteRegStr HKLM "${UNINSTALL_KEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKLM "${UNINSTALL_KEY}" "Publisher" "cflow studio developers"
  WriteRegStr HKLM "${UNINSTALL_KEY}" "DisplayIcon" "$INSTDIR\bin\cflow-studio.exe"
  WriteRegStr HKLM "${UNINSTALL_KEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr HKLM "${UNINSTALL_KEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKLM "${UNINSTALL_KEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
  WriteRegDWORD HKLM "${UNINSTALL_KEY}" "NoModify" 1
  WriteRegDWORD HKLM "${UNINSTALL_KEY}" "NoRepair" 1
  WriteRegDWORD HKLM "${UNINSTALL_KEY}" "EstimatedSize" ${SIZE_KB}
SectionEnd

; $INSTDIR\bin appended to the user's PATH unless it is there already. The PATH is read into an NSIS
; string (NSIS_MAX_STRLEN characters): one that might not fit is left alone, with a note, rather than
; written back cut short. Whether this install added it is kept under Software\${APP_KEY}, so the
; uninstaller takes off only what it put on.
Section "Add cflow to the PATH (command prompts)" SecPath
  ReadRegStr $0 HKCU "${ENV_KEY}" "Path"
  StrLen $1 $0
  StrLen $2 "$INSTDIR\bin;"
  IntOp $1 $1 + $2
  ${If} $1 >= ${NSIS_MAX_STRLEN}
    DetailPrint "Your PATH is too long to change safely here; add $INSTDIR\bin to it by hand."
    MessageBox MB_ICONINFORMATION "Your PATH is too long for the installer to change safely: add $INSTDIR\bin to it by hand, or use the Start menu's ${PROMPT_NAME}." /SD IDOK
    Goto path_done
  ${EndIf}
  ; Present already (any case, as Windows compares paths): nothing to add, nothing to remove later.
  ${WordReplace} ";$0;" ";$INSTDIR\bin;" ";" "+" $1
  ${If} $1 != ";$0;"
    DetailPrint "$INSTDIR\bin is on your PATH already."
    Goto path_done
  ${EndIf}
  ${If} $0 == ""
    StrCpy $0 "$INSTDIR\bin"
  ${Else}
    StrCpy $0 "$0;$INSTDIR\bin"
  ${EndIf}
  WriteRegExpandStr HKCU "${ENV_KEY}" "Path" "$0"
  WriteRegStr HKLM "Software\${APP_KEY}" "AddedToPath" "$INSTDIR\bin"
  ; Programs started from now on (Explorer, new consoles) read the new PATH.
  SendMessage ${HWND_BROADCAST} ${WM_SETTINGCHANGE} 0 "STR:Environment" /TIMEOUT=5000
  path_done:
SectionEnd

!insertmacro MUI_FUNCTION_DESCRIPTION_BEGIN
  !insertmacro MUI_DESCRIPTION_TEXT ${SecMain} "The desktop app, the cflow command-line tool and the bundled models."
  !insertmacro MUI_DESCRIPTION_TEXT ${SecPath} "Lets any new command prompt run cflow.exe (adds its folder to your PATH; removed on uninstall)."
!insertmacro MUI_FUNCTION_DESCRIPTION_END

Section "Uninstall"
  SetShellVarContext all
  ; The PATH entry this install added, if any, taken off; the rest of the PATH stays as it is. A
  ; PATH that grew past what an NSIS string holds is not written back (it would be cut short).
  ReadRegStr $2 HKLM "Software\${APP_KEY}" "AddedToPath"
  ReadRegStr $0 HKCU "${ENV_KEY}" "Path"
  StrLen $1 $0
  IntOp $1 $1 + 3
  ${If} $2 != ""
  ${AndIf} $1 >= ${NSIS_MAX_STRLEN}
    DetailPrint "Your PATH is too long to change safely here; take $2 off it by hand."
  ${ElseIf} $2 != ""
    ${WordReplace} ";$0;" ";$2;" ";" "+" $1
    ${If} $1 != ";$0;"
      ; Drop the ";" added around it above (and any left at either end).
      StrCpy $1 $1 "" 1
      StrCpy $3 $1 1 -1
      ${If} $3 == ";"
        StrCpy $1 $1 -1
      ${EndIf}
      ${If} $1 == ""
        DeleteRegValue HKCU "${ENV_KEY}" "Path"
      ${Else}
        WriteRegExpandStr HKCU "${ENV_KEY}" "Path" "$1"
      ${EndIf}
      SendMessage ${HWND_BROADCAST} ${WM_SETTINGCHANGE} 0 "STR:Environment" /TIMEOUT=5000
    ${EndIf}
  ${EndIf}
  Delete "$INSTDIR\bin\cflow-prompt.cmd"
  !include "${FILES}\unfiles.nsh"
  Delete "$INSTDIR\uninstall.exe"
  ; Only folders left empty go: a file a user put there keeps its folder.
  RMDir "$INSTDIR"
  Delete "$SMPROGRAMS\${APP_NAME}\${APP_NAME}.lnk"
  Delete "$SMPROGRAMS\${APP_NAME}\Uninstall ${APP_NAME}.lnk"
  Delete "$SMPROGRAMS\${APP_NAME}\${PROMPT_NAME}.lnk"
  RMDir "$SMPROGRAMS\${APP_NAME}"
  DeleteRegKey HKLM "${UNINSTALL_KEY}"
  DeleteRegKey HKLM "Software\${APP_KEY}"
SectionEnd
