
ÿÿÿÿ
-
predPlaceholder*
dtype