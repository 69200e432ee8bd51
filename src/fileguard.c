/* ==========================================================================================
   src/fileguard.c: Files a graph names, kept inside the session's data dir      >>fileguard
   df_session_options.data_dir NULL: an op's path is used as given (the program is trusted with
   its own files). Set: the path is resolved inside that directory from a descriptor of it, one
   component at a time (openat with O_NOFOLLOW | O_DIRECTORY), so no '..', absolute path or
   symbolic link (there before, or swapped in during the walk) leads out. What is outside is
   refused from the path's text alone, before any file is looked at: the same DF_PERMISSION_DENIED
   whether it exists or not. "" refuses every file; so does a build without openat.
   ========================================================================================== */
#ifndef O_CLOEXEC
#define O_CLOEXEC 0            /* (hidden by strict C modes in the one-translation-unit use) */
#endif

#ifdef DF__HAVE_OPENAT
static df_code df__guard_outside(df_status *st, const char *path, const char *data_dir) {
    return df_status_set(st, DF_PERMISSION_DENIED, "The path '%s' is outside the data dir '%s' (df_session_options.data_dir); "
                         "files of a graph's ops stay inside it", path, data_dir);
}

/* Splits the path in buf (written over) into components: empty ones and '.' dropped, a '..'
   taking back the component before it. A '..' with nothing before it is dropped when `clamp`
   (at "/", as the kernel does) and makes the result -1 otherwise (it climbs out). */
static int df__guard_split(char *buf, const char **comps, int clamp) {
    int n = 0;
    for (char *p = buf; *p;) {
        while (*p == '/') *p++ = '\0';
        if (!*p) break;
        char *c = p;
        while (*p && *p != '/') p++;
        if (*p) *p++ = '\0';
        if (!strcmp(c, ".")) continue;
        if (!strcmp(c, "..")) {
            if (n) n--;
            else if (!clamp) return -1;
            continue;
        }
        comps[n++] = c;
    }
    return n;
}
/* The number of components of an absolute path in `dir` that start abs[0..n): the length of
   the prefix when dir's components are exactly abs's first ones, else -1. */
static int df__guard_prefix(const char *dir, const char *const *abs, int n) {
    size_t len = strlen(dir);
    char *buf = (char *)DF_MALLOC(len + 1);
    const char **dc = (const char **)DF_MALLOC((len / 2 + 2) * sizeof(char *));
    int m = -1;
    if (buf && dc) {
        memcpy(buf, dir, len + 1);
        m = df__guard_split(buf, dc, 1);
        if (m > n) m = -1;
        for (int i = 0; m >= 0 && i < m; i++)
            if (strcmp(dc[i], abs[i])) m = -1;
    }
    DF_FREE(buf); DF_FREE((void *)dc);
    return m;
}
#endif

DF_PRIVATE df_code df__fileloc_resolve(const char *data_dir, const char *path, df__fileloc *pl, df_status *st) {
    pl->dir = DF__CWD;
    pl->name = path;
    pl->buf = NULL;
    if (!data_dir) return DF_OK;
    if (!*data_dir)
        return df_status_set(st, DF_PERMISSION_DENIED, "The path '%s' is refused: this session opens no files (its data_dir is \"\", "
                             "as a worker started without --data-dir)", path);
#ifndef DF__HAVE_OPENAT
    return df_status_set(st, DF_PERMISSION_DENIED, "The path '%s' is refused: this build of the library cannot keep files inside the "
                         "data dir '%s' (openat and O_NOFOLLOW were hidden when dataflow.c was compiled; compile it with "
                         "_POSIX_C_SOURCE 200809L)", path, data_dir);
#else
    size_t len = strlen(path);
    const char **comps = (const char **)DF_MALLOC((len / 2 + 2) * sizeof(char *));
    char *buf = (char *)DF_MALLOC(len + 1);
    char *cwd = NULL, *real = NULL;
    int n = 0, skip = 0, fd = -1;
    df_code code = DF_OK;
    if (!comps || !buf) { code = df_status_set(st, DF_RESOURCE_EXHAUSTED, "Out of memory resolving a path"); goto done; }
    memcpy(buf, path, len + 1);
    if (path[0] != '/') {
        if ((n = df__guard_split(buf, comps, 0)) < 0) { code = df__guard_outside(st, path, data_dir); goto done; }
    } else {
        /* An absolute path: its components after the data dir's (written as given, made
           absolute; else found by inode below) */
        n = df__guard_split(buf, comps, 1);
        skip = -1;
        if (data_dir[0] == '/') skip = df__guard_prefix(data_dir, comps, n);
        else {
            size_t cap = 4096, dl = strlen(data_dir);
            if ((cwd = (char *)DF_MALLOC(cap + dl + 2)) && getcwd(cwd, cap)) {
                size_t cl = strlen(cwd);
                cwd[cl] = '/';
                memcpy(cwd + cl + 1, data_dir, dl + 1);
                skip = df__guard_prefix(cwd, comps, n);
            }
        }
    }
    if ((fd = open(data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        code = df_status_set(st, DF_FAILED_PRECONDITION, "The data dir '%s' cannot be opened: %s", data_dir, strerror(errno));
        goto done;
    }
    if (skip < 0) {
        /* Not under the data dir as written: under it by another name (a link on the way to
           it: /tmp -> /private/tmp)? The path's leading directories against the data dir's
           device and inode. Whatever they are, a path outside is refused the same way. */
        struct stat root, sb;
        size_t at = 0;
        if (!(real = (char *)DF_MALLOC(len + 2)) || fstat(fd, &root)) { code = df__guard_outside(st, path, data_dir); goto done; }
        real[at++] = '/';
        real[at] = '\0';
        for (int k = 0; k < n && skip < 0; k++) {
            if (!stat(real, &sb) && sb.st_dev == root.st_dev && sb.st_ino == root.st_ino) skip = k;
            size_t cl = strlen(comps[k]);
            if (k) real[at++] = '/';
            memcpy(real + at, comps[k], cl + 1);
            at += cl;
        }
        if (skip < 0) { code = df__guard_outside(st, path, data_dir); goto done; }
    }
    if (n - skip <= 0) { code = df_status_set(st, DF_INVALID_ARGUMENT, "The path '%s' names the data dir '%s' itself, not a file in it", path, data_dir); goto done; }
    for (int i = skip; i < n - 1; i++) {
        int next = openat(fd, comps[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next >= 0) { close(fd); fd = next; continue; }
        int err = errno;
        struct stat sb;
        int link = err == ELOOP || err == EMLINK || (!fstatat(fd, comps[i], &sb, AT_SYMLINK_NOFOLLOW) && S_ISLNK(sb.st_mode));
        if (link)
            code = df_status_set(st, DF_PERMISSION_DENIED, "The path '%s' goes through '%s', a symbolic link in the data dir '%s': links are not "
                                 "followed there (one could lead outside the data dir)", path, comps[i], data_dir);
        else if (err == ENOENT) code = df_status_set(st, DF_NOT_FOUND, "The path '%s': there is no directory '%s' on the way in the data dir '%s'", path, comps[i], data_dir);
        else if (err == ENOTDIR) code = df_status_set(st, DF_FAILED_PRECONDITION, "The path '%s': '%s' on the way is not a directory", path, comps[i]);
        else code = df_status_set(st, err == EACCES || err == EPERM ? DF_PERMISSION_DENIED : DF_FAILED_PRECONDITION,
                                  "The path '%s': cannot open the directory '%s' on the way: %s", path, comps[i], strerror(err));
        goto done;
    }
    /* the name alone, at the start of buf (comps point into buf, after it) */
    {
        size_t nl = strlen(comps[n - 1]);
        memmove(buf, comps[n - 1], nl + 1);
    }
    pl->dir = fd;
    pl->name = pl->buf = buf;
    fd = -1;
    buf = NULL;
done:
    if (fd >= 0) close(fd);
    DF_FREE(buf); DF_FREE((void *)comps); DF_FREE(cwd); DF_FREE(real);
    return code;
#endif
}

DF_PRIVATE void df__fileloc_close(df__fileloc *pl) {
    if (pl->dir != DF__CWD && pl->dir >= 0) close(pl->dir);
    DF_FREE(pl->buf);
    pl->dir = DF__CWD;
    pl->buf = NULL;
    pl->name = NULL;
}

#ifdef DF__HAVE_OPENAT
DF_PRIVATE int df__fileloc_open(const df__fileloc *pl, const char *name, int flags, unsigned mode) {
    return openat(pl->dir, name, pl->dir == DF__CWD ? flags : flags | O_NOFOLLOW, (mode_t)mode);
}
DF_PRIVATE int df__fileloc_rename(const df__fileloc *pl, const char *from, const char *to) { return renameat(pl->dir, from, pl->dir, to); }
DF_PRIVATE int df__fileloc_unlink(const df__fileloc *pl, const char *name) { return unlinkat(pl->dir, name, 0); }
#else
/* (only DF__CWD places exist without openat: df__fileloc_resolve refuses a data dir) */
DF_PRIVATE int df__fileloc_open(const df__fileloc *pl, const char *name, int flags, unsigned mode) { DF__UNUSED(pl); return open(name, flags, (mode_t)mode); }
DF_PRIVATE int df__fileloc_rename(const df__fileloc *pl, const char *from, const char *to) { DF__UNUSED(pl); return rename(from, to); }
DF_PRIVATE int df__fileloc_unlink(const df__fileloc *pl, const char *name) { DF__UNUSED(pl); return unlink(name); }
#endif

DF_PRIVATE df_code df__fileloc_check_target(const df__fileloc *pl, const char *path, df_status *st) {
    if (pl->dir == DF__CWD) return DF_OK;
#ifdef DF__HAVE_OPENAT
    struct stat sb;
    if (fstatat(pl->dir, pl->name, &sb, AT_SYMLINK_NOFOLLOW) || S_ISREG(sb.st_mode)) return DF_OK;
    if (S_ISLNK(sb.st_mode))
        return df_status_set(st, DF_PERMISSION_DENIED, "The path '%s' is a symbolic link in the data dir: links are not followed there "
                             "(one could lead outside the data dir)", path);
    return df_status_set(st, DF_FAILED_PRECONDITION, "The path '%s' is not a regular file", path);
#else
    DF__UNUSED(path); DF__UNUSED(st);
    return DF_OK;
#endif
}

DF_PRIVATE int df__fileloc_link_refused(const df__fileloc *pl, int err, const char *path, df_status *st) {
    if (pl->dir == DF__CWD || (err != ELOOP && err != EMLINK)) return 0;
    df_status_set(st, DF_PERMISSION_DENIED, "The path '%s' is a symbolic link in the data dir: links are not followed there "
                  "(one could lead outside the data dir)", path);
    return 1;
}
