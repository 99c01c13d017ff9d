/* platform.c (Linux) - default paths and the absolute-path rule for the
 * configuration. */
#include "config_int.h"

#include "px/px_util.h"

int px__cfg_path_absolute(const char *path) {
  return path && path[0] == '/';
}

char *px__cfg_default_file(void) {
  return px_strdup("/etc/phoenix-executor/executor.json");
}

char *px__cfg_default_kb_store(void) {
  return px_strdup("/var/lib/phoenix-executor/kb-store");
}

char *px__cfg_default_work_root(void) {
  return px_strdup("/var/lib/phoenix-executor/jobs");
}

char *px__cfg_system_dir(void) {
  return px_strdup("/usr/bin/");
}
