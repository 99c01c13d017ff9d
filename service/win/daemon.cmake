# service/win/daemon.cmake - filled in by its component.
