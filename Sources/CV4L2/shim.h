#include <linux/videodev2.h>
#include <libv4l2.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

// ioctl request numbers are macros built from _IOWR; Swift cannot import them.
static inline unsigned long cv4l2_querycap(void) { return VIDIOC_QUERYCAP; }
static inline unsigned long cv4l2_enum_fmt(void) { return VIDIOC_ENUM_FMT; }
static inline unsigned long cv4l2_enum_framesizes(void) { return VIDIOC_ENUM_FRAMESIZES; }
static inline unsigned long cv4l2_enum_frameintervals(void) { return VIDIOC_ENUM_FRAMEINTERVALS; }
