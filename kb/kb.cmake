# kb/kb.cmake - filled in by its component.
