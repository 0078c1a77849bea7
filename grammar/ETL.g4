// ETL.g4 - the grammar of ETL (.etl files).
//
// The generated C++ parser (ETLLexer/ETLParser, visitor, no listener) is used
// only by compiler/frontend, which turns parse trees into the AST of
// compiler/ast/ast.h. See grammar/README.md for a syntax reference.
//
// Decisions:
//  - Element types (f32, f16, bf16, f8e4m3, f8e5m2, i8 .. i64, u8 .. u32, i4,
//    u4) are plain identifiers here; the
//    AST builder reports UnknownElemType, which gives a better message than a
//    syntax error.
//  - `name<T>` starts a generic call only when followed by `[` or `(`:
//    `zeros<f32>[TM]`, `cast<f16>(x)`, `full<f32>[TB](v)`. The (meaningless)
//    chained comparison `a < b > (c)` therefore parses as a generic call.
//  - A slice component is `e`, `lo .. hi` or `lo .. +extent`; sema decides
//    whether `e` is an index or a gather index (a 1-D integer tile).
//  - Characters the lexer does not know and unterminated block comments become
//    tokens on the hidden channel; the frontend reports them, so the parser
//    never sees them and each bad character is one clean error.
//  - Bit operators bind tighter than comparisons (as in Rust, unlike C):
//    `x & 1 == 0` is `(x & 1) == 0`. Shifts bind tighter than `&`. `>>` is
//    one token; types never nest (`tensor<f32>`, `cast<i32>(...)`), so no
//    `>` `>` pair can occur in a type.
//  - `fn` bodies reuse `block`; `return` is a statement everywhere so the AST
//    builder can report one outside a fn, or not last in it, precisely.
grammar ETL;

// -- declarations -----------------------------------------------------------

program : topDecl* EOF ;

topDecl : constDecl | kernelDecl | fnDecl | importDecl ;

// A tunable constant: `const TK = 64 in [16, 32, 64, 128] where K_TILE % TK == 0;`
// The value after `=` is the default, the list its candidates, the `where`
// conditions constraints between tunables (sema checks all three).
constDecl : 'const' IDENT '=' expr tunableCandidates? ';' ;

tunableCandidates : 'in' '[' exprList ']' whereClause? ;

importDecl : 'import' IDENT ('.' IDENT)* ';' ;

fnDecl : 'fn' IDENT '(' (fnParam (',' fnParam)*)? ')' block ;

fnParam : IDENT ;

kernelDecl
  : 'kernel' IDENT dimParams? '(' (param (',' param)*)? ')' whereClause? scheduleClause?
    '{' kernelItem* '}'
  ;

dimParams : '<' dimParam (',' dimParam)* '>' ;

dimParam : IDENT ':' 'dim' ;

// A scalar parameter (`eps: f32`) is a run-time value bound with
// etlBindScalar; its element type is a plain identifier like tensors'.
param : IDENT ':' (tensorType | scalarType) initializer? ;

scalarType : IDENT ;

tensorType : 'tensor' '<' IDENT '>' '[' exprList? ']' ;

whereClause : 'where' expr (',' expr)* ;

// `schedule static` / `schedule dynamic`; the word is checked by the frontend.
scheduleClause : 'schedule' IDENT ;

kernelItem : bufferDecl | eventDecl | taskDecl ;

// `= zeros`: the runtime clears the buffer before each run; without an
// initializer its contents start undefined. Only `zeros` is accepted (the
// frontend says so); a parameter's initializer is refused there too.
bufferDecl : 'buffer' IDENT ':' tensorType initializer? ';' ;

initializer : '=' expr ;

eventDecl : 'event' IDENT '[' exprList? ']' ';' ;

taskDecl
  : 'task' IDENT '[' domainIndex (',' domainIndex)* ']' scheduleClause? waitsClause?
    notifiesClause? block
  ;

domainIndex : IDENT 'in' expr '..' expr ;

waitsClause : 'waits' eventRef (',' eventRef)* ;

notifiesClause : 'notifies' eventRef (',' eventRef)* ;

eventRef : IDENT '[' (eventIndex (',' eventIndex)*)? ']' ;

eventIndex : '*' | expr ;

// -- statements -------------------------------------------------------------

block : '{' stmt* '}' ;

stmt
  : 'let' IDENT '=' expr ';'                                  # letStmt
  | 'var' IDENT '=' expr ';'                                  # varStmt
  | IDENT op=('=' | '+=' | '-=' | '*=' | '/=') expr ';'       # assignStmt
  | 'for' IDENT 'in' expr '..' expr ('step' expr)? block      # forStmt
  | ifChain                                                   # ifStmt
  | 'return' expr ';'                                         # returnStmt
  | expr ';'                                                  # exprStmt
  ;

// `if c { } else if d { } else { }`: the else-if chain nests (Stmt::else_body).
ifChain : 'if' expr block ('else' (block | ifChain))? ;

// -- expressions (precedence from high to low) ------------------------------

expr
  : primary                                   # primaryExpr
  | expr '[' sliceComp (',' sliceComp)* ']'   # indexExpr
  | op=('-' | '!' | '~') expr                 # unaryExpr
  | expr op=('*' | '/' | '%') expr            # binaryExpr
  | expr op=('+' | '-') expr                  # binaryExpr
  | expr op=('<<' | '>>') expr                # binaryExpr
  | expr op='&' expr                          # binaryExpr
  | expr op='^' expr                          # binaryExpr
  | expr op='|' expr                          # binaryExpr
  | expr op=('<' | '<=' | '>' | '>=') expr    # binaryExpr
  | expr op=('==' | '!=') expr                # binaryExpr
  | expr op='&&' expr                         # binaryExpr
  | expr op='||' expr                         # binaryExpr
  ;

primary
  : INT                                                         # intLit
  | FLOAT                                                       # floatLit
  | IDENT '<' IDENT '>' '[' exprList? ']' ('(' callArgs? ')')?  # genericCall
  | IDENT '<' IDENT '>' '(' callArgs? ')'                       # genericCall
  | IDENT '(' callArgs? ')'                                     # call
  | IDENT                                                       # name
  | '(' expr ')'                                                # paren
  ;

sliceComp
  : expr '..' '+' expr   # extentRange
  | expr '..' expr       # boundsRange
  | expr                 # plainIndex
  ;

exprList : expr (',' expr)* ;

callArgs : callArg (',' callArg)* ;

callArg
  : IDENT '=' expr   # kwArg
  | expr             # posArg
  ;

// -- lexer ------------------------------------------------------------------

IDENT : [a-zA-Z_] [a-zA-Z_0-9]* ;
FLOAT : [0-9]+ '.' [0-9]+ EXPONENT? | [0-9]+ EXPONENT ;
INT : [0-9]+ ;
fragment EXPONENT : [eE] [+-]? [0-9]+ ;

WS : [ \t\r\n]+ -> skip ;
LINE_COMMENT : '//' ~[\n]* -> skip ;
BLOCK_COMMENT : '/*' .*? '*/' -> skip ;
// A `/*` with no `*/` after it: everything to the end of the file (it cannot
// contain `*/`, or BLOCK_COMMENT would match a longer text).
UNTERMINATED_COMMENT : '/*' (~'*' | '*'+ ~[*/])* '*'* -> channel(HIDDEN) ;
ERROR_CHAR : . -> channel(HIDDEN) ;
