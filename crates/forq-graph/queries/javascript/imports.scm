; ES imports and CommonJS requires: @module the specifier, @name the
; imported name (`default` for a default import), @alias the local name.
(import_statement (import_clause (identifier) @alias) source: (string (string_fragment) @module)) @import
(import_statement (import_clause (named_imports (import_specifier name: (identifier) @name !alias))) source: (string (string_fragment) @module)) @import
(import_statement (import_clause (named_imports (import_specifier name: (identifier) @name alias: (identifier) @alias))) source: (string (string_fragment) @module)) @import
(import_statement (import_clause (namespace_import (identifier) @alias)) source: (string (string_fragment) @module)) @import
(lexical_declaration (variable_declarator name: (identifier) @alias value: (call_expression function: (identifier) @req arguments: (arguments (string (string_fragment) @module))) (#eq? @req "require"))) @import
(variable_declaration (variable_declarator name: (identifier) @alias value: (call_expression function: (identifier) @req arguments: (arguments (string (string_fragment) @module))) (#eq? @req "require"))) @import
