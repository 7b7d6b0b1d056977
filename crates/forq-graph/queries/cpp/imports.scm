; `#include "local.h"`: @module the header as written (system headers in
; angle brackets are outside the repository and not recorded).
(preproc_include path: (string_literal (string_content) @module)) @import
