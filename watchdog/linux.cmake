# watchdog/linux.cmake - filled in by its component.
