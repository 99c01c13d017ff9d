/* evt_limit.h - a per-client rate limit for the operational events a
 * client can cause at will (its jobs killed by a limit, cancelled,
 * aborted), so that one client cannot flood the system log (the Windows
 * Application log; service/win/eventlog.c uses it).
 *
 * Rule: per client and interval, the first event is reported, the rest are
 * counted. The next event reported for that client after the interval
 * carries the count of those suppressed; a client that went quiet gets
 * its count reported by px_evt_limit_sweep. A "client" is an identity
 * (the user SID, uid or ZeroMQ key of the engine's client name, without
 * the per-connection pid), so reconnecting does not reset the limit.
 * The table is bounded: when every slot holds a client inside its
 * interval, further new clients share one overflow slot (also limited).
 *
 * Portable and clock-injected (tests pass a fake clock). Not thread-safe:
 * the caller serialises (log sinks run under the log lock).
 */
#ifndef PX_EVT_LIMIT_H
#define PX_EVT_LIMIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct px_evt_limit_s px_evt_limit_t;

/* The clock: milliseconds, monotonic. NULL in px_evt_limit_new: px_now_ms. */
typedef uint64_t (*px_evt_clock_fn)(void *ctx);

/* A summary px_evt_limit_sweep hands out: `count` events of `client`
 * were suppressed since its last report. `client` is valid during the
 * call only. */
typedef void (*px_evt_summary_fn)(void *ctx, const char *client,
                                  uint64_t count);

/* The overflow slot's client name. */
#define PX_EVT_LIMIT_OTHERS "(other clients)"

/* A limiter with `slots` tracked clients (>= 1) and one event per client
 * per `interval_ms`. NULL on OOM or a zero argument. Free with
 * px_evt_limit_free. */
px_evt_limit_t *px_evt_limit_new(uint64_t interval_ms, size_t slots,
                                 px_evt_clock_fn clock, void *clock_ctx);
void px_evt_limit_free(px_evt_limit_t *l);

/* One event of `client`. Returns 1 when it is to be reported, with
 * *suppressed = the events of this client suppressed since its previous
 * report (0 if none; the count restarts); 0 when it is suppressed (and
 * counted). */
int px_evt_limit_check(px_evt_limit_t *l, const char *client,
                       uint64_t *suppressed);

/* Hand every client whose interval has ended with suppressed events to
 * fn (and restart its count); with all != 0, every client with suppressed
 * events, ended or not (at shutdown). Returns the number handed out. */
size_t px_evt_limit_sweep(px_evt_limit_t *l, int all, px_evt_summary_fn fn,
                          void *ctx);

/* The client of an engine job message: "... (key K, client NAME): ..."
 * or "... (key K, client NAME) killed: ...", NAME without its " pid N"
 * suffix, into out. The last ", client " is taken: what precedes it (the
 * quoted job id, the key) may be chosen by the client, what follows it is
 * fixed text. 0, PX_ENOENT when msg names no client this way, PX_ERANGE
 * when out is too small. */
int px_evt_limit_client(const char *msg, char *out, size_t outsz);

#ifdef __cplusplus
}
#endif
#endif /* PX_EVT_LIMIT_H */
