; `class A extends B`: @def the class, @base the parent's name.
(class_declaration (class_heritage (identifier) @base)) @def
(class_declaration (class_heritage (member_expression property: (property_identifier) @base))) @def
