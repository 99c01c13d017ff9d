/* px_error.h - the one error table of PhoenixExecutor.
 *
 * Every fallible function returns int: 0 on success or a negative PX_E* code.
 * OS errors are converted in one place each (errno: base/errno_map.c;
 * Win32: base/win/win_error.c, px_win_error.h) and the raw OS code is
 * kept for the log, never returned to callers.
 */
#ifndef PX_ERROR_H
#define PX_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, "message") - values are stable; add new codes at the end. */
#define PX_ERRNO_MAP(X)                                                      \
  X(PX_EINVAL,     -1,  "invalid argument")                                  \
  X(PX_ENOMEM,     -2,  "out of memory")                                     \
  X(PX_EIO,        -3,  "input/output error")                                \
  X(PX_ENOENT,     -4,  "no such file or directory")                         \
  X(PX_EEXIST,     -5,  "already exists")                                    \
  X(PX_EACCES,     -6,  "permission denied")                                 \
  X(PX_ETIMEDOUT,  -7,  "timed out")                                         \
  X(PX_ERANGE,     -8,  "value out of range")                                \
  X(PX_ENOSPC,     -9,  "no space or capacity left")                         \
  X(PX_EAGAIN,     -10, "resource temporarily unavailable")                  \
  X(PX_ECLOSED,    -11, "closed")                                            \
  X(PX_EPROTO,     -12, "protocol error")                                    \
  X(PX_ECONFIG,    -13, "invalid configuration")                             \
  X(PX_EPOLICY,    -14, "refused by policy")                                 \
  X(PX_EJOB,       -15, "job object or cgroup operation failed")             \
  X(PX_ETOKEN,     -16, "security token operation failed")                   \
  X(PX_EACL,       -17, "access control operation failed")                   \
  X(PX_ESPAWN,     -18, "process creation failed")                           \
  X(PX_ESANDBOX,   -19, "sandbox setup failed")                              \
  X(PX_ENOTSUP,    -20, "not supported on this platform")                    \
  X(PX_ECANCELED,  -21, "cancelled")                                         \
  X(PX_EBUSY,      -22, "busy")                                              \
  X(PX_ELOOP,      -23, "link or reparse point refused")                     \
  X(PX_EOVERFLOW,  -24, "value too large")                                   \
  X(PX_EINTEGRITY, -25, "integrity check failed")                            \
  X(PX_EOS,        -26, "operating system error")                           \
  X(PX_ENOIMAGE,   -27, "container image not present")                      \
  X(PX_ENOENGINE,  -28, "container engine unavailable")                     \
  X(PX_EPROCESS,   -29, "the OS refused to create the process")

typedef enum {
#define PX_ERR_ENUM_(name, val, msg) name = val,
  PX_ERRNO_MAP(PX_ERR_ENUM_)
#undef PX_ERR_ENUM_
  PX_OK = 0
} px_err_t;

/* A short English message for a PX_E* code; never NULL ("unknown error"
 * for codes outside the table). The string is static. */
const char *px_strerror(int err);

/* The symbolic name ("PX_EINVAL") for a code, or "PX_E?" if unknown. */
const char *px_err_name(int err);

/* Map an errno value to a PX_E* code (PX_EOS when there is no closer
 * match). Implemented for every platform; on Windows it maps the CRT
 * errno values. */
int px_err_from_errno(int e);

#ifdef __cplusplus
}
#endif
#endif /* PX_ERROR_H */
