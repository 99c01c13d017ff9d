# service/linux/daemon.cmake - filled in by its component.
