; Base classes: @def the class or struct, @base a base's name.
(class_specifier (base_class_clause (type_identifier) @base)) @def
(struct_specifier (base_class_clause (type_identifier) @base)) @def
(class_specifier (base_class_clause (qualified_identifier name: (type_identifier) @base))) @def
