#include <zmq.h>
#include <errno.h>

// zmq_errno() reads the thread's errno; this names the values Swift needs to compare with.
static inline int czmq_eagain(void) { return EAGAIN; }
static inline int czmq_eintr(void) { return EINTR; }
static inline int czmq_eaddrinuse(void) { return EADDRINUSE; }

#include <sys/eventfd.h>

// A descriptor zmq_poll watches beside a socket, to end a wait from another thread
// (Glibc's Swift module does not export eventfd).
static inline int czmq_wakeup_descriptor(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }
