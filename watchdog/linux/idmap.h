/* idmap.h - a user namespace for idmapped mounts (idmap.c): the native
 * backend binds KB roots through one (backend.c), the container backend
 * its KB views (watchdog/container/linux/host.c). */
#ifndef PX_LNX_IDMAP_H
#define PX_LNX_IDMAP_H

/* A user namespace whose only mappings are outer_uid -> inner_uid and
 * outer_gid -> inner_gid (setgroups denied), held by the returned
 * descriptor (O_CLOEXEC; the caller closes it), or -1 when the kernel or
 * our privileges do not allow one (the caller then binds plainly and
 * says so). Made by a child that unshares and waits while its maps are
 * written; the namespace outlives the child through the descriptor. */
int px__lnx_idmap_userns(unsigned long outer_uid, unsigned long inner_uid,
                         unsigned long outer_gid, unsigned long inner_gid);

#endif /* PX_LNX_IDMAP_H */
