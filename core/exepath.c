/* exepath.c: which path names our binary for a process we start from it (the launcher's servers,
 * agentd and its successor, the dashboard): the path this process was started by, when it still
 * leads to the running binary, so an upgrade that repoints a symlink there (npm shims, Homebrew
 * links) is followed. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exepath.h"

/* The PATH entry naming an executable called name, malloc'd, or NULL (PATH unset: the usual
 * default, as execvp does). */
static char *exepath_which(const char *name)
{
  const char *path = getenv("PATH");
  if (path == NULL) path = "/usr/local/bin:/usr/bin:/bin";
  while (*path) {
    size_t n = strcspn(path, ":");
    if (n > 0) {
      char cand[PATH_MAX];
      if (snprintf(cand, sizeof(cand), "%.*s/%s", (int)n, path, name) < (int)sizeof(cand) &&
          access(cand, X_OK) == 0)
        return strdup(cand);
    }
    path += n;
    if (*path == ':') path++;
  }
  return NULL;
}

/* argv0 made absolute (or found on PATH) when it resolves to self (the running binary's real
 * path), else a copy of self; malloc'd (NULL: out of memory). */
char *exepath_invoked(const char *argv0, const char *self)
{
  if (argv0 == NULL || *argv0 == '\0') return strdup(self);
  char *path = NULL;
  if (argv0[0] == '/') {
    path = strdup(argv0);
  } else if (strchr(argv0, '/')) {
    char *cwd = getcwd(NULL, 0);
    const char *rel = strncmp(argv0, "./", 2) == 0 ? argv0 + 2 : argv0;
    if (cwd && (path = malloc(strlen(cwd) + strlen(rel) + 2)) != NULL) sprintf(path, "%s/%s", cwd, rel);
    free(cwd);
  } else {
    path = exepath_which(argv0);
  }
  char *real = path ? realpath(path, NULL) : NULL;
  int same = real && strcmp(real, self) == 0;
  free(real);
  if (!same) {
    free(path);
    return strdup(self);
  }
  return path;
}
