; Definitions in Rust: @def.<kind> is the whole item, @name its name.
(struct_item name: (type_identifier) @name) @def.struct
(enum_item name: (type_identifier) @name) @def.enum
(union_item name: (type_identifier) @name) @def.struct
(trait_item name: (type_identifier) @name) @def.trait
(type_item name: (type_identifier) @name) @def.type
(function_item name: (identifier) @name) @def.function
(function_signature_item name: (identifier) @name) @def.function
(mod_item name: (identifier) @name) @def.module
(const_item name: (identifier) @name) @def.constant
(static_item name: (identifier) @name) @def.constant
(macro_definition name: (identifier) @name) @def.macro

; An impl block contains methods; it is named after its type.
(impl_item type: (_) @name) @def.impl
