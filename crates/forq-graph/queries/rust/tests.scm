; A test attribute (`#[test]`, `#[tokio::test]`, `#[rstest]`, ...) marks the
; function item that follows it; `#[cfg(test)]` marks a test module.
(attribute_item (attribute (identifier) @attr (#match? @attr "^(test|rstest|test_case|quickcheck)$"))) @test.attr
(attribute_item (attribute (scoped_identifier name: (identifier) @attr) (#eq? @attr "test"))) @test.attr
(attribute_item (attribute (identifier) @cfg arguments: (token_tree (identifier) @arg) (#eq? @cfg "cfg") (#eq? @arg "test"))) @test.attr
