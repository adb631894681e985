/*
 * unit_sandbox: runs a command under the kernel-enforced restrictions a systemd unit's
 * [Service] section asks for, for machines where systemd is not PID 1 (tests, CI containers).
 *
 *   unit_sandbox [--explain] UNIT [--set Key=Value]... -- COMMAND [ARG...]
 *
 * It reads UNIT's [Service] lines (the last assignment of a key wins; --set replaces one), then
 * does what systemd's service manager does for the settings below, in the same way, and execs
 * COMMAND. The seccomp rules follow systemd's src/shared/seccomp-util.c
 * (seccomp_restrict_namespaces, seccomp_restrict_address_families, seccomp_restrict_realtime,
 * seccomp_lock_personality, seccomp_protect_hostname, seccomp_protect_syslog,
 * seccomp_restrict_suid_sgid / seccomp_restrict_sxid, seccomp_restrict_archs, and the
 * @clock, @module and @raw-io sets that ProtectClock=, ProtectKernelModules= and
 * PrivateDevices= deny in src/core/execute.c), written here as one classic-BPF program
 * instead of libseccomp calls:
 *
 *   RestrictNamespaces=     unshare(2) and clone(2) with a forbidden CLONE_NEW* flag, and
 *                           setns(2) with one (or with 0), fail with EPERM; clone3(2) fails
 *                           with ENOSYS so that libc falls back to clone(2) (systemd/systemd
 *                           pull request 23126: its flags are in memory a filter cannot read)
 *   RestrictAddressFamilies= socket(2) of another family fails with EAFNOSUPPORT
 *   SystemCallArchitectures=native  system calls of another ABI (i386, x32) kill the process
 *   LockPersonality=        personality(2) to anything but the current one fails (EPERM)
 *   RestrictRealtime=       sched_setscheduler(2) to other than OTHER, BATCH, IDLE (EPERM)
 *   RestrictSUIDSGID=       chmod/fchmod/fchmodat/fchmodat2/mkdir/mkdirat/mknod/mknodat/open/
 *                           openat/creat with S_ISUID or S_ISGID fail (EPERM), openat2 (ENOSYS)
 *   ProtectHostname=        a new UTS namespace; sethostname/setdomainname fail (EPERM)
 *   ProtectKernelLogs=      syslog(2) fails (EPERM); CAP_SYSLOG leaves the bounding set
 *   ProtectKernelModules=   init_module/finit_module/delete_module fail; CAP_SYS_MODULE goes
 *   ProtectClock=           adjtimex/clock_adjtime/clock_settime/settimeofday fail;
 *                           CAP_SYS_TIME and CAP_WAKE_ALARM go
 *   PrivateDevices=         ioperm/iopl fail; CAP_MKNOD and CAP_SYS_RAWIO go (its private
 *                           /dev is not made)
 *   NoNewPrivileges=, UMask=, LimitNOFILE=
 *
 * Not reproduced (they are mounts of the unit's own namespace, or resource controls):
 * ProtectSystem=, ProtectHome=, PrivateTmp=, ProtectKernelTunables=, ProtectControlGroups=,
 * the /dev of PrivateDevices=, the paths of ProtectKernelLogs= and ProtectKernelModules=,
 * StateDirectory=, ConfigurationDirectory=, MemoryMax=. --explain lists what was applied and
 * what was not. Arguments are compared on their low 32 bits, which is what the kernel reads
 * for every argument filtered here (flags, modes, families, policies are int-sized).
 * x86-64 and arm64 only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "unit_sandbox supports x86-64 and arm64"
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#define X32_SYSCALL_BIT 0x40000000u

/* ---- the unit's settings ---- */

#define MAX_SETTINGS 256
static char *keys[MAX_SETTINGS];
static char *values[MAX_SETTINGS];
static int nsettings;

static void set(const char *key, const char *value) {
  for (int i = 0; i < nsettings; i++) {
    if (strcmp(keys[i], key) == 0) {
      free(values[i]);
      values[i] = strdup(value);
      return;
    }
  }
  if (nsettings == MAX_SETTINGS) {
    fprintf(stderr, "unit_sandbox: too many settings\n");
    exit(2);
  }
  keys[nsettings] = strdup(key);
  values[nsettings++] = strdup(value);
}

static const char *get(const char *key) {
  for (int i = 0; i < nsettings; i++) {
    if (strcmp(keys[i], key) == 0) return values[i];
  }
  return NULL;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t') s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t')) {
    s[--n] = 0;
  }
  return s;
}

static void set_assignment(char *line, const char *where) {
  char *eq = strchr(line, '=');
  if (!eq) {
    fprintf(stderr, "unit_sandbox: %s: not Key=Value: %s\n", where, line);
    exit(2);
  }
  *eq = 0;
  set(trim(line), trim(eq + 1));
}

static void read_unit(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "unit_sandbox: cannot read %s: %s\n", path, strerror(errno));
    exit(2);
  }
  char buf[4096];
  int in_service = 0;
  while (fgets(buf, sizeof buf, f)) {
    char *line = trim(buf);
    if (*line == 0 || *line == '#' || *line == ';') continue;
    if (*line == '[') {
      in_service = strcmp(line, "[Service]") == 0;
      continue;
    }
    if (in_service) set_assignment(line, path);
  }
  fclose(f);
}

static int yes(const char *key) {
  const char *v = get(key);
  return v && (strcmp(v, "yes") == 0 || strcmp(v, "true") == 0 || strcmp(v, "1") == 0 ||
               strcmp(v, "on") == 0);
}

/* ---- the BPF program ---- */

static struct sock_filter prog[4096];
static unsigned short plen;

static void emit(unsigned short code, uint32_t k, unsigned char jt, unsigned char jf) {
  if (plen == sizeof prog / sizeof prog[0]) {
    fprintf(stderr, "unit_sandbox: filter too long\n");
    exit(2);
  }
  prog[plen++] = (struct sock_filter){code, jt, jf, k};
}

enum op { EQ, NE, GT, MASKED_EQ };
struct cond {
  int arg;
  enum op op;
  uint32_t mask;
  uint32_t value;
};

static int cond_len(const struct cond *c) { return c->op == MASKED_EQ ? 3 : 2; }

/* One rule: if the system call is `nr` and every condition holds, return `action`. */
static void rule(int nr, uint32_t action, int n, const struct cond *conds) {
  int len = 3;
  for (int i = 0; i < n; i++) len += cond_len(&conds[i]);
  int at = 0;
  emit(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr), 0, 0);
  at++;
  emit(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, (unsigned char)(len - at - 1));
  at++;
  for (int i = 0; i < n; i++) {
    const struct cond *c = &conds[i];
    emit(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args) + 8 * c->arg, 0, 0);
    at++;
    if (c->op == MASKED_EQ) {
      emit(BPF_ALU | BPF_AND | BPF_K, c->mask, 0, 0);
      at++;
    }
    unsigned char skip = (unsigned char)(len - at - 1);
    if (c->op == NE) emit(BPF_JMP | BPF_JEQ | BPF_K, c->value, skip, 0);
    else if (c->op == GT) emit(BPF_JMP | BPF_JGT | BPF_K, c->value, 0, skip);
    else emit(BPF_JMP | BPF_JEQ | BPF_K, c->value, 0, skip);
    at++;
  }
  emit(BPF_RET | BPF_K, action, 0, 0);
}

static void deny(int nr, int err) { rule(nr, SECCOMP_RET_ERRNO | (uint32_t)err, 0, NULL); }

static void deny_if(int nr, int err, struct cond c) {
  rule(nr, SECCOMP_RET_ERRNO | (uint32_t)err, 1, &c);
}

/* ---- the settings, one function each ---- */

static const struct {
  const char *name;
  unsigned long flag;
} namespaces[] = {
    {"cgroup", CLONE_NEWCGROUP}, {"ipc", CLONE_NEWIPC}, {"net", CLONE_NEWNET},
    {"mnt", CLONE_NEWNS},        {"pid", CLONE_NEWPID}, {"user", CLONE_NEWUSER},
    {"uts", CLONE_NEWUTS},       {"time", CLONE_NEWTIME},
};
#define NAMESPACE_COUNT (sizeof namespaces / sizeof namespaces[0])

static unsigned long namespace_list(const char *list) {
  unsigned long flags = 0;
  char *copy = strdup(list);
  for (char *word = strtok(copy, " \t"); word; word = strtok(NULL, " \t")) {
    size_t i = 0;
    while (i < NAMESPACE_COUNT && strcmp(namespaces[i].name, word) != 0) i++;
    if (i == NAMESPACE_COUNT) {
      fprintf(stderr, "unit_sandbox: RestrictNamespaces=: unknown namespace type %s\n", word);
      exit(2);
    }
    flags |= namespaces[i].flag;
  }
  free(copy);
  return flags;
}

static void restrict_namespaces(const char *v) {
  unsigned long all = 0;
  for (size_t i = 0; i < NAMESPACE_COUNT; i++) all |= namespaces[i].flag;
  unsigned long retain;
  if (strcmp(v, "yes") == 0 || strcmp(v, "true") == 0) retain = 0;
  else if (strcmp(v, "no") == 0 || strcmp(v, "false") == 0 || *v == 0) retain = all;
  else if (*v == '~') retain = all & ~namespace_list(v + 1);
  else retain = namespace_list(v);
  if (retain == all) return;
  if (retain == 0) deny(__NR_setns, EPERM);
  else deny_if(__NR_setns, EPERM, (struct cond){1, EQ, 0, 0});
  for (size_t i = 0; i < NAMESPACE_COUNT; i++) {
    uint32_t f = (uint32_t)namespaces[i].flag;
    if (retain & f) continue;
    deny_if(__NR_unshare, EPERM, (struct cond){0, MASKED_EQ, f, f});
    deny_if(__NR_clone, EPERM, (struct cond){0, MASKED_EQ, f, f});
    if (retain != 0) deny_if(__NR_setns, EPERM, (struct cond){1, MASKED_EQ, f, f});
  }
  deny(__NR_clone3, ENOSYS);
}

static const struct {
  const char *name;
  int family;
} families[] = {
    {"AF_UNIX", AF_UNIX},   {"AF_LOCAL", AF_LOCAL},   {"AF_INET", AF_INET},
    {"AF_INET6", AF_INET6}, {"AF_NETLINK", AF_NETLINK}, {"AF_PACKET", AF_PACKET},
    {"AF_ALG", AF_ALG},     {"AF_VSOCK", AF_VSOCK},   {"AF_CAN", AF_CAN},
    {"AF_BLUETOOTH", AF_BLUETOOTH}, {"AF_XDP", 44},
};

static int family_of(const char *name) {
  for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
    if (strcmp(families[i].name, name) == 0) return families[i].family;
  }
  fprintf(stderr, "unit_sandbox: RestrictAddressFamilies=: unknown family %s\n", name);
  exit(2);
}

static void restrict_address_families(const char *v) {
  if (strcmp(v, "none") == 0) {
    deny(__NR_socket, EAFNOSUPPORT);
    return;
  }
  int deny_list = *v == '~';
  char *copy = strdup(deny_list ? v + 1 : v);
  struct cond conds[64];
  int n = 0;
  for (char *word = strtok(copy, " \t"); word && n < 64; word = strtok(NULL, " \t")) {
    int af = family_of(word);
    if (deny_list) deny_if(__NR_socket, EAFNOSUPPORT, (struct cond){0, EQ, 0, (uint32_t)af});
    else conds[n++] = (struct cond){0, NE, 0, (uint32_t)af};
  }
  /* An allow list: a family that is none of them is refused. */
  if (!deny_list) rule(__NR_socket, SECCOMP_RET_ERRNO | EAFNOSUPPORT, n, conds);
  free(copy);
}

static void restrict_realtime(void) {
  /* Allowed: SCHED_OTHER (0), SCHED_BATCH (3), SCHED_IDLE (5); everything else is refused. */
  for (uint32_t p = 0; p < SCHED_IDLE; p++) {
    if (p == SCHED_OTHER || p == SCHED_BATCH) continue;
    deny_if(__NR_sched_setscheduler, EPERM, (struct cond){1, EQ, 0, p});
  }
  deny_if(__NR_sched_setscheduler, EPERM, (struct cond){1, GT, 0, SCHED_IDLE});
}

static void restrict_sxid(uint32_t m) {
  struct cond mode1 = {1, MASKED_EQ, m, m}, mode2 = {2, MASKED_EQ, m, m};
  deny_if(__NR_fchmod, EPERM, mode1);
  deny_if(__NR_fchmodat, EPERM, mode2);
  deny_if(__NR_fchmodat2, EPERM, mode2);
  deny_if(__NR_mkdirat, EPERM, mode2);
  deny_if(__NR_mknodat, EPERM, mode2);
#ifdef __NR_chmod
  deny_if(__NR_chmod, EPERM, mode1);
  deny_if(__NR_mkdir, EPERM, mode1);
  deny_if(__NR_mknod, EPERM, mode1);
  deny_if(__NR_creat, EPERM, mode1);
  struct cond open_conds[] = {{1, MASKED_EQ, O_CREAT, O_CREAT}, {2, MASKED_EQ, m, m}};
  rule(__NR_open, SECCOMP_RET_ERRNO | EPERM, 2, open_conds);
#endif
  struct cond openat_conds[] = {{2, MASKED_EQ, O_CREAT, O_CREAT}, {3, MASKED_EQ, m, m}};
  rule(__NR_openat, SECCOMP_RET_ERRNO | EPERM, 2, openat_conds);
}

static void drop_capability(int cap) {
  if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
    fprintf(stderr, "unit_sandbox: cannot drop capability %d: %s\n", cap, strerror(errno));
    exit(2);
  }
}

static const char *const applied[] = {
    "RestrictNamespaces",   "RestrictAddressFamilies", "SystemCallArchitectures",
    "LockPersonality",      "RestrictRealtime",        "RestrictSUIDSGID",
    "ProtectHostname",      "ProtectKernelLogs",       "ProtectKernelModules",
    "ProtectClock",         "PrivateDevices",          "NoNewPrivileges",
    "UMask",                "LimitNOFILE",
};

static void explain(void) {
  for (int i = 0; i < nsettings; i++) {
    int done = 0;
    for (size_t j = 0; j < sizeof applied / sizeof applied[0]; j++) {
      if (strcmp(applied[j], keys[i]) == 0) done = 1;
    }
    fprintf(stderr, "unit_sandbox: %s %s=%s\n", done ? "applied" : "not reproduced", keys[i],
            values[i]);
  }
}

int main(int argc, char **argv) {
  int i = 1, verbose = 0;
  if (i < argc && strcmp(argv[i], "--explain") == 0) verbose = 1, i++;
  if (i >= argc) {
    fprintf(stderr, "usage: unit_sandbox [--explain] UNIT [--set Key=Value]... -- COMMAND...\n");
    return 2;
  }
  read_unit(argv[i++]);
  for (; i < argc && strcmp(argv[i], "--"); i++) {
    if (strcmp(argv[i], "--set") == 0 && i + 1 < argc) set_assignment(strdup(argv[++i]), "--set");
    else {
      fprintf(stderr, "unit_sandbox: unexpected argument %s\n", argv[i]);
      return 2;
    }
  }
  if (i + 1 >= argc) {
    fprintf(stderr, "unit_sandbox: no command after --\n");
    return 2;
  }
  char **command = argv + i + 1;
  if (verbose) explain();

  const char *v;
  if ((v = get("UMask"))) umask((mode_t)strtol(v, NULL, 8));
  if ((v = get("LimitNOFILE"))) {
    /* As far as this machine's hard limit allows (systemd, as PID 1, may raise it). */
    rlim_t want = (rlim_t)strtoull(v, NULL, 10);
    struct rlimit lim = {want, want};
    if (setrlimit(RLIMIT_NOFILE, &lim) < 0 && getrlimit(RLIMIT_NOFILE, &lim) == 0) {
      lim.rlim_cur = want < lim.rlim_max ? want : lim.rlim_max;
      setrlimit(RLIMIT_NOFILE, &lim);
    }
  }
  if (yes("ProtectHostname") && unshare(CLONE_NEWUTS) < 0) {
    perror("unit_sandbox: ProtectHostname: unshare(CLONE_NEWUTS)");
    return 2;
  }
  if (yes("ProtectKernelLogs")) drop_capability(CAP_SYSLOG);
  if (yes("ProtectKernelModules")) drop_capability(CAP_SYS_MODULE);
  if (yes("ProtectClock")) drop_capability(CAP_SYS_TIME), drop_capability(CAP_WAKE_ALARM);
  if (yes("PrivateDevices")) drop_capability(CAP_MKNOD), drop_capability(CAP_SYS_RAWIO);

  /* The architecture first: a system call of another ABI never reaches the rules below. */
  uint32_t other_abi = SECCOMP_RET_ALLOW;
  if ((v = get("SystemCallArchitectures")) && *v) {
    if (strcmp(v, "native") != 0) {
      fprintf(stderr, "unit_sandbox: SystemCallArchitectures=%s: only native is supported\n", v);
      return 2;
    }
    other_abi = SECCOMP_RET_KILL_PROCESS;
  }
  emit(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch), 0, 0);
  emit(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0);
  emit(BPF_RET | BPF_K, other_abi, 0, 0);
#if defined(__x86_64__)
  emit(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr), 0, 0);
  emit(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 1);
  emit(BPF_RET | BPF_K, other_abi, 0, 0);
#endif
  unsigned short rules_start = plen;

  if ((v = get("RestrictNamespaces"))) restrict_namespaces(v);
  if ((v = get("RestrictAddressFamilies")) && *v) restrict_address_families(v);
  if (yes("LockPersonality")) {
    int current = personality(0xffffffff);
    deny_if(__NR_personality, EPERM, (struct cond){0, NE, 0, (uint32_t)current});
  }
  if (yes("RestrictRealtime")) restrict_realtime();
  if (yes("RestrictSUIDSGID")) {
    restrict_sxid(S_ISUID);
    restrict_sxid(S_ISGID);
    deny(__NR_openat2, ENOSYS);
  }
  if (yes("ProtectHostname")) deny(__NR_sethostname, EPERM), deny(__NR_setdomainname, EPERM);
  if (yes("ProtectKernelLogs")) deny(__NR_syslog, EPERM);
  if (yes("ProtectKernelModules")) {
    deny(__NR_init_module, EPERM);
    deny(__NR_finit_module, EPERM);
    deny(__NR_delete_module, EPERM);
  }
  if (yes("ProtectClock")) {
    deny(__NR_adjtimex, EPERM);
    deny(__NR_clock_adjtime, EPERM);
    deny(__NR_clock_settime, EPERM);
    deny(__NR_settimeofday, EPERM);
  }
#ifdef __NR_iopl
  if (yes("PrivateDevices")) deny(__NR_iopl, EPERM), deny(__NR_ioperm, EPERM);
#endif
  emit(BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);

  if (yes("NoNewPrivileges") && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
    perror("unit_sandbox: NoNewPrivileges");
    return 2;
  }
  if (plen > rules_start + 1 || other_abi != SECCOMP_RET_ALLOW) {
    struct sock_fprog fprog = {plen, prog};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) < 0) {
      perror("unit_sandbox: seccomp");
      return 2;
    }
  }
  execvp(command[0], command);
  fprintf(stderr, "unit_sandbox: cannot run %s: %s\n", command[0], strerror(errno));
  return 127;
}
