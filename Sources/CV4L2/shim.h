#include <linux/videodev2.h>
#include <libv4l2.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <fcntl.h>

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
