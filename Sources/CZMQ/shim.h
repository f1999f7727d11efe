#include <zmq.h>
#include <errno.h>

// zmq_errno() reads the thread's errno; this names the values Swift needs to compare with.
static inline int czmq_eagain(void) { return EAGAIN; }
static inline int czmq_eintr(void) { return EINTR; }
static inline int czmq_eaddrinuse(void) { return EADDRINUSE; }
