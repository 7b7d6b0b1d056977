; `impl Trait for Type`: the impl implements the trait.
(impl_item trait: (type_identifier) @base) @def
(impl_item trait: (scoped_type_identifier name: (type_identifier) @base)) @def
(impl_item trait: (generic_type type: (type_identifier) @base)) @def
(trait_item bounds: (trait_bounds (type_identifier) @base)) @def
