#include <ft2build.h>
#include FT_FREETYPE_H

// FreeType's load flags are macros Swift cannot import.
static inline FT_Int32 cfreetype_load_render(void) { return FT_LOAD_RENDER; }
