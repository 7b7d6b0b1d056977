; GoogleTest, Catch2, doctest and Boost.Test cases, which parse as
; functions named by the macro: @name is the macro's argument list.
(function_definition
  declarator: (function_declarator
    declarator: (identifier) @macro
    parameters: (parameter_list) @name)
  (#match? @macro "^(TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P|TEST_CASE|TEST_CASE_METHOD|SCENARIO|BOOST_AUTO_TEST_CASE|BOOST_FIXTURE_TEST_CASE|BOOST_DATA_TEST_CASE)$")) @test
