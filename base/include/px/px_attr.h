/* px_attr.h - compiler attributes shared by the public headers. */
#ifndef PX_ATTR_H
#define PX_ATTR_H

/* printf-style format checking. mingw builds use the C99-conformant
 * mingw stdio (__USE_MINGW_ANSI_STDIO=1), so %zu/%llu are right there too:
 * check against gnu_printf, not the MS runtime's rules. */
#if defined(__GNUC__) && defined(_WIN32)
#define PX_PRINTF(fmt, args) __attribute__((format(gnu_printf, fmt, args)))
#elif defined(__GNUC__)
#define PX_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define PX_PRINTF(fmt, args)
#endif

/* Thread-local storage. MSVC's C compiler has no _Thread_local (C11 makes
 * threads optional); __declspec(thread) is its spelling. */
#if defined(_MSC_VER) && !defined(__clang__)
#define PX_THREAD_LOCAL __declspec(thread)
#else
#define PX_THREAD_LOCAL _Thread_local
#endif

#endif
