/* images.c - the image runtimes' images: each checked at open (pulled
 * when containers.pull allows), the missing ones logged and remembered;
 * their jobs fail at prepare, and status and the warm pool ask here. */
#include "ctr_int.h"

#include "px/px_error.h"
#include "px/px_log.h"
#include "px/px_util.h"

#include <string.h>

/* Each configured image must be there (or be pulled when allowed); the
 * missing ones are logged and remembered: their jobs fail at prepare. */
int px__ctr_images_check(px__ctr_t *be) {
  const char *const *im;
  for (im = be->opts.container_images; im && *im; im++) {
    int have = px__ctr_dk_image_present(be->endpoint, *im);
    if (have == 0 && be->opts.container_pull &&
        px__ctr_dk_image_pull(be->endpoint, *im) == 0)
      have = px__ctr_dk_image_present(be->endpoint, *im);
    if (have < 0)
      return have;
    if (have)
      continue;
    PX_LOG(PX_LOG_ERROR, "container image %s is not present%s: its "
                         "runtime's jobs will fail", *im,
           be->opts.container_pull ? " and could not be pulled"
                                   : " (containers.pull is \"never\")");
    if (px_array_reserve(&be->missing, &be->cap_missing, be->nmissing + 1,
                         sizeof *be->missing, 4) ||
        !(be->missing[be->nmissing] = px_strdup(*im)))
      return PX_ENOMEM;
    be->nmissing++;
  }
  return 0;
}

int px__ctr_image_missing(const px__ctr_t *be, const char *image) {
  size_t i;
  for (i = 0; i < be->nmissing; i++)
    if (strcmp(be->missing[i], image) == 0)
      return 1;
  return 0;
}
