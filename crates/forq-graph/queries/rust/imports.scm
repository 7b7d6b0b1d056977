; `use` declarations: @module the path before the last segment, @name the
; segment brought into scope, @alias its local name when renamed.
(use_declaration argument: (scoped_identifier path: (_) @module name: (identifier) @name)) @import
(use_declaration argument: (use_as_clause path: (scoped_identifier path: (_) @module name: (identifier) @name) alias: (identifier) @alias)) @import
(use_declaration argument: (scoped_use_list path: (_) @module list: (use_list (identifier) @name))) @import
(use_declaration argument: (scoped_use_list path: (_) @module list: (use_list (use_as_clause path: (identifier) @name alias: (identifier) @alias)))) @import
