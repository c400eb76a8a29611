/* exepath.h: the path that names this binary for the processes we start from it. */
#ifndef RMCP_EXEPATH_H
#define RMCP_EXEPATH_H

char *exepath_invoked(const char *argv0, const char *self);

#endif
