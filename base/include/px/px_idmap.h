/* px_idmap.h - a user namespace for idmapped mounts (idmap.c): the native
 * backend binds KB roots through one (backend.c), the container backend
 * its KB views (watchdog/container/linux/host.c). Both map the job's uid
 * to the KB owner (kb.owner_uid), never to the daemon's uid. */
#ifndef PX_LNX_IDMAP_H
#define PX_LNX_IDMAP_H

/* A user namespace whose only mappings are outer_uid -> inner_uid and
 * outer_gid -> inner_gid (setgroups denied): through an idmapped mount,
 * an entry owned by outer_uid on disk is inner_uid's to the caller, and
 * what inner_uid creates is outer_uid's on disk; held by the returned
 * descriptor (O_CLOEXEC; the caller closes it), or -1 when the kernel or
 * our privileges do not allow one (the caller then binds plainly and
 * says so). Made by a child that unshares and waits while its maps are
 * written; the namespace outlives the child through the descriptor. */
int px_os_idmap_userns(unsigned long outer_uid, unsigned long inner_uid,
                         unsigned long outer_gid, unsigned long inner_gid);

#endif /* PX_LNX_IDMAP_H */
