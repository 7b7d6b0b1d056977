; Imports: @module the package path, @alias the local name when given.
(import_spec name: (package_identifier) @alias path: (interpreted_string_literal (interpreted_string_literal_content) @module)) @import
(import_spec !name path: (interpreted_string_literal (interpreted_string_literal_content) @module)) @import
