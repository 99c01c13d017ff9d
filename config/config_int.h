/* config_int.h - internals shared by the files of config/ (not a seam).
 *
 * The parser (config.c, config_lists.c, both on the typed reads of
 * config_read.h) fills a px_config_t that starts as the built-in defaults
 * (defaults.c); the platform files (linux/, win/) supply default paths and
 * the file checks.
 */
#ifndef PX_CONFIG_INT_H
#define PX_CONFIG_INT_H

#include "config_read.h"
#include "px/px_config.h"

#include <cjson/cJSON.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Collection sections (config_lists.c). Each replaces or merges into the
 * current value in cfg as docs/config.md describes. */
int px__cfg_parse_runtimes(px__cfg_ctx_t *ctx, const cJSON *it,
                           const char *path, px_config_t *cfg);
int px__cfg_parse_clients(px__cfg_ctx_t *ctx, const cJSON *it, const char *path,
                          px_config_t *cfg);
int px__cfg_parse_audit_rules(px__cfg_ctx_t *ctx, const cJSON *it,
                              const char *path, px_config_t *cfg);
int px__cfg_parse_kb_roots(px__cfg_ctx_t *ctx, const cJSON *it,
                           const char *path, px_config_t *cfg);
/* Cross-field checks after the whole file was read. */
int px__cfg_check_lists(px__cfg_ctx_t *ctx, const px_config_t *cfg);

/* Emitters for the same collections (config_lists.c). NULL on OOM. */
cJSON *px__cfg_emit_runtimes(const px_config_t *cfg);
cJSON *px__cfg_emit_clients(const px_config_t *cfg);
cJSON *px__cfg_emit_audit_rules(const px_config_t *cfg);
cJSON *px__cfg_emit_kb_roots(const px_config_t *cfg);

/* Free helpers (config_lists.c). */
void px__cfg_free_runtime(px_runtime_t *rt);
void px__cfg_free_client(px_client_policy_t *c);
void px__cfg_free_ruleset(px_audit_ruleset_t *set);
void px__cfg_free_strv(char **v, size_t n);

/* cluster.pool's default: this platform's pool. */
#ifdef _WIN32
#define PX__CFG_DEFAULT_POOL "windows-x64"
#else
#define PX__CFG_DEFAULT_POOL "linux-x64"
#endif

/* Fill cfg with the built-in defaults (defaults.c). 0 or PX_ENOMEM; on
 * failure cfg holds what was built (px__cfg_release frees it). */
int px__cfg_defaults(px_config_t *cfg);
/* Names of the built-in runtimes of this platform (static). A printed
 * config lists a missing one as null so that it parses back the same. */
size_t px__cfg_default_runtime_names(const char *const **names);
/* Release everything cfg owns, not cfg itself. */
void px__cfg_release(px_config_t *cfg);
/* A ruleset copied from the shipped table. 0 or PX_ENOMEM. */
int px__cfg_ruleset_from_default(const char *name, px_audit_ruleset_t *out);

/* Platform (config/linux/platform.c, config/win/platform.c). */
/* 1 if path is absolute for this platform ("/x" or "C:\x", "\\srv\x"). */
int px__cfg_path_absolute(const char *path);
/* malloc'd platform default paths; NULL on OOM. */
char *px__cfg_default_file(void); /* executor.json */
char *px__cfg_default_kb_store(void);
char *px__cfg_default_work_root(void);
/* Directory holding the OS's own programs with a trailing separator
 * ("C:\Windows\System32\" / "/usr/bin/"), malloc'd. */
char *px__cfg_system_dir(void);

/* The platform file checks are fault sites (px/px_fault.h, test-seam
 * builds): "config.filecheck_open", "config.filecheck_stat" (fstat /
 * GetFileInformationByHandle), "config.filecheck_security" (owner / DACL
 * query), "config.filecheck_read". */
#ifdef _WIN32
/* Windows test seam: apply the owner/DACL rules to a security descriptor
 * given as SDDL ("O:SYD:(A;;FA;;;SY)..."), as they apply to a file's. */
int px__cfg_check_sddl(const char *sddl, unsigned flags, char *err,
                          size_t errsz);
#endif

#endif /* PX_CONFIG_INT_H */
