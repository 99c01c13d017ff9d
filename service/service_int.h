/* service_int.h - internals shared by service.c and session.c. */
#ifndef PX_SERVICE_INT_H
#define PX_SERVICE_INT_H

#include "px/px_config.h"
#include "px/px_engine.h"
#include "px/px_kb.h"
#include "px/px_os.h"
#include "px/px_service.h"

struct px_service_s {
  const px_config_t *cfg;   /* borrowed */
  px_engine_t *eng;         /* owned */
  px_kb_t *kb;              /* owned; NULL without KB roots */
  const char **ro_binds;    /* owned array, borrowed strings; NULL-ended */
  const char **images;      /* the same: image runtimes' images, or NULL */
  char version[32];
};

struct px_session_s {
  px_service_t *svc;                  /* borrowed */
  px_peer_t peer;
  const px_client_policy_t *policy;   /* borrowed from cfg; NULL: none */
  px_session_send_fn send;
  void *ctx;                          /* the transport's, borrowed */
  px_engine_client_t *ec;             /* closed in px_session_close */
  px_mutex_t lock;                    /* guards closing and send */
  int closing;
};

/* The engine event callback of every session (session.c). */
void px__session_on_event(void *ctx, const px_engine_event_t *ev);

#endif
