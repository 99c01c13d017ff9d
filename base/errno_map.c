/* errno_map.c - errno -> PX_E*, the one place that maps C library errno
 * values (POSIX on Linux, the CRT's on Windows). */
#include "px/px_error.h"

#include <errno.h>

int px_err_from_errno(int e) {
  switch (e) {
  case 0: return 0;
  case EINVAL: return PX_EINVAL;
  case ENOMEM: return PX_ENOMEM;
  case EIO: return PX_EIO;
  case ENOENT: return PX_ENOENT;
  case EEXIST: return PX_EEXIST;
  case EACCES:
  case EPERM: return PX_EACCES;
  case ETIMEDOUT: return PX_ETIMEDOUT;
  case ERANGE: return PX_ERANGE;
  case ENOSPC: return PX_ENOSPC;
  case EAGAIN: return PX_EAGAIN;
  case EPIPE: return PX_ECLOSED;
  case EBUSY: return PX_EBUSY;
  case ELOOP: return PX_ELOOP;
  case EOVERFLOW: return PX_EOVERFLOW;
  case ENOSYS: return PX_ENOTSUP;
  case ECANCELED: return PX_ECANCELED;
  default: return PX_EOS;
  }
}
