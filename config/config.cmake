# config/config.cmake - filled in by its component.
