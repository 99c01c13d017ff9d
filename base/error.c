/* error.c - the PX_E* table: messages and names (px_error.h). */
#include "px/px_error.h"

#include <stddef.h>

typedef struct {
  int code;
  const char *name;
  const char *msg;
} err_row_t;

static const err_row_t err_table[] = {
#define ROW_(name, val, msg) {val, #name, msg},
    PX_ERRNO_MAP(ROW_)
#undef ROW_
};

static const err_row_t *find(int err) {
  size_t i;
  for (i = 0; i < sizeof(err_table) / sizeof(err_table[0]); i++)
    if (err_table[i].code == err)
      return &err_table[i];
  return NULL;
}

const char *px_strerror(int err) {
  const err_row_t *row;
  if (err == 0)
    return "success";
  row = find(err);
  return row ? row->msg : "unknown error";
}

const char *px_err_name(int err) {
  const err_row_t *row;
  if (err == 0)
    return "PX_OK";
  row = find(err);
  return row ? row->name : "PX_E?";
}
