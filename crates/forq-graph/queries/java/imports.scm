; `import a.b.C;` and `import static a.b.C.m;`: @module the package or class,
; @name the last segment.
(import_declaration (scoped_identifier scope: (_) @module name: (identifier) @name)) @import
