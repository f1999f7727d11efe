#ifndef SIGHTLINE_CALSA_H
#define SIGHTLINE_CALSA_H
// ALSA's PCM capture API (libasound2-dev) for microphones.
#include <alsa/asoundlib.h>
#endif
