; Embedded struct fields and interfaces: @def the type, @base the embedded one.
(type_declaration (type_spec type: (struct_type (field_declaration_list (field_declaration !name type: (type_identifier) @base))))) @def
(type_declaration (type_spec type: (struct_type (field_declaration_list (field_declaration !name type: (pointer_type (type_identifier) @base)))))) @def
