; Imports in Python: @module the module path as written (dots and all),
; @name an imported name, @alias the local name when renamed.
(import_statement name: (dotted_name) @module) @import
(import_statement name: (aliased_import name: (dotted_name) @module alias: (identifier) @alias)) @import
(import_from_statement module_name: (_) @module name: (dotted_name) @name) @import
(import_from_statement module_name: (_) @module name: (aliased_import name: (dotted_name) @name alias: (identifier) @alias)) @import
