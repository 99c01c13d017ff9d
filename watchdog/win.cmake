# watchdog/win.cmake - filled in by its component.
