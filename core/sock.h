/* sock.h: the secure socket directory, Unix socket listen/connect with SO_PEERCRED checks. */
#ifndef RMCP_SOCK_H
#define RMCP_SOCK_H

#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

typedef struct sock_listener sock_listener_t;

/* A peer of our own uid connected; the callee owns fd (CLOEXEC, non-blocking). */
typedef void (*sock_accept_cb)(sock_listener_t *l, int fd, uid_t uid, pid_t pid);

int sock_secure_dir(const char *path, char *msg, size_t msglen);
int sock_listen(uv_loop_t *loop, const char *path, sock_accept_cb cb, void *data,
                sock_listener_t **out, char *msg, size_t msglen);
void sock_listener_close(sock_listener_t *l);
void *sock_listener_data(const sock_listener_t *l);
int sock_connect(const char *path, int *fd, char *msg, size_t msglen);

#endif
