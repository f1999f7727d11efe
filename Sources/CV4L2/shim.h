#include <linux/videodev2.h>
#include <libv4l2.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <errno.h>

// ioctl request numbers are macros built from _IOWR; Swift cannot import them.
static inline unsigned long cv4l2_querycap(void) { return VIDIOC_QUERYCAP; }
static inline unsigned long cv4l2_enum_fmt(void) { return VIDIOC_ENUM_FMT; }
static inline unsigned long cv4l2_enum_framesizes(void) { return VIDIOC_ENUM_FRAMESIZES; }
static inline unsigned long cv4l2_enum_frameintervals(void) { return VIDIOC_ENUM_FRAMEINTERVALS; }
static inline unsigned long cv4l2_s_fmt(void) { return VIDIOC_S_FMT; }
static inline unsigned long cv4l2_s_parm(void) { return VIDIOC_S_PARM; }
static inline unsigned long cv4l2_g_parm(void) { return VIDIOC_G_PARM; }
static inline unsigned long cv4l2_reqbufs(void) { return VIDIOC_REQBUFS; }
static inline unsigned long cv4l2_querybuf(void) { return VIDIOC_QUERYBUF; }
static inline unsigned long cv4l2_qbuf(void) { return VIDIOC_QBUF; }
static inline unsigned long cv4l2_dqbuf(void) { return VIDIOC_DQBUF; }
static inline unsigned long cv4l2_streamon(void) { return VIDIOC_STREAMON; }
static inline unsigned long cv4l2_streamoff(void) { return VIDIOC_STREAMOFF; }

// libv4l2's open and ioctl are variadic, which Swift cannot call.
static inline int cv4l2_open(const char *path) { return v4l2_open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC, 0); }
static inline int cv4l2_ioctl(int fd, unsigned long request, void *argument) { return v4l2_ioctl(fd, request, argument); }
static inline unsigned long cv4l2_queryctrl(void) { return VIDIOC_QUERYCTRL; }
static inline unsigned long cv4l2_s_ctrl(void) { return VIDIOC_S_CTRL; }

// Controls go to the kernel directly: libv4l2 adds its own emulated controls to the
// queries, which are not the device's.
static inline int cv4l2_device_ioctl(int fd, unsigned long request, void *argument) { return ioctl(fd, request, argument); }
static inline unsigned long cv4l2_query_ext_ctrl(void) { return VIDIOC_QUERY_EXT_CTRL; }
static inline unsigned long cv4l2_querymenu(void) { return VIDIOC_QUERYMENU; }
static inline unsigned long cv4l2_g_ext_ctrls(void) { return VIDIOC_G_EXT_CTRLS; }
static inline unsigned long cv4l2_s_ext_ctrls(void) { return VIDIOC_S_EXT_CTRLS; }
static inline unsigned long cv4l2_try_ext_ctrls(void) { return VIDIOC_TRY_EXT_CTRLS; }

#include <linux/netlink.h>
#include <sys/socket.h>
#include <string.h>
#include <unistd.h>

// A socket on the kernel's uevent group: devices as they come and go. -1 with errno set.
static inline int cv4l2_uevent_socket(void) {
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
    if (fd < 0) return -1;
    struct sockaddr_nl address;
    memset(&address, 0, sizeof address);
    address.nl_family = AF_NETLINK;
    address.nl_groups = 1;  // the kernel's own messages, not udev's (group 2)
    if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0) { int e = errno; close(fd); errno = e; return -1; }
    return fd;
}

// Receives one message; returns its length, 0 for a message not from the kernel, -1 on error.
static inline long cv4l2_uevent_receive(int fd, void *buffer, unsigned long capacity) {
    struct sockaddr_nl sender;
    socklen_t length = sizeof sender;
    long received = recvfrom(fd, buffer, capacity, 0, (struct sockaddr *)&sender, &length);
    if (received < 0) return -1;
    return sender.nl_pid == 0 ? received : 0;
}
