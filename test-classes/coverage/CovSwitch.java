/**
 * Coverage expectations (format: CovBasics). @every-line: every line with code carries one.
 * Switches on strings (the hashCode dispatch and equals chain are not branches of the source)
 * and enums (the $SwitchMap$ class is compiler-generated; an exhaustive switch expression's
 * generated default is no branch). Close hash codes make javac dispatch on them with a
 * tableswitch whose gaps jump to the default ("+" "-" "*" "/": 42..47 without 44 and 46;
 * "a" "c" "e": 97..101 without 98 and 100): no branches of the source either.
 */
public class CovSwitch { // hits=0
    enum Color { // hits=1
        RED, // hits=1
        GREEN, // hits=1
        BLUE // hits=1
    }

    static int text(String s) {
        switch (s) { // hits=6 br=4/5
            case "Aa": // "Aa" and "BB" have the same hashCode
                return 1; // hits=2
            case "BB":
                return 2; // hits=1
            case "x":
                return 3; // hits=1
            case "unused":
                return 4; // hits=0
            default:
                return 0; // hits=2
        }
    }

    static int op(String s) {
        switch (s) { // hits=7 br=4/5
            case "+":
                return 1; // hits=2
            case "-":
                return 2; // hits=1
            case "*":
                return 3; // hits=1
            case "/":
                return 4; // hits=0
            default:
                return 0; // hits=3
        }
    }

    static String letter(String s) {
        return switch (s) { // hits=5 br=3/4
            case "a" -> "A"; // hits=2
            case "c" -> "C"; // hits=0
            case "e" -> "E"; // hits=1
            default -> "-"; // hits=2
        };
    }

    static int colorStatement(Color c) {
        int r = 0; // hits=3
        switch (c) { // hits=3 br=2/3
            case RED:
                r = 1; // hits=2
                break; // hits=2
            case GREEN:
                r = 2; // hits=1
                break;
        }
        return r; // hits=3
    }

    static String colorExpression(Color c) {
        return switch (c) { // hits=4 br=2/3 jacoco=partly 2/4 (0.8.6 counts the generated default)
            case RED -> "r"; // hits=1
            case GREEN -> "g"; // hits=0
            case BLUE -> "b"; // hits=3
        };
    }

    public static void main(String[] args) {
        for (String s : new String[] {"Aa", "BB", "x", "Aa", "Ab", "zzz"}) { // hits=1 br=2/2
            text(s); // hits=6
        }
        // "," (44) and "." (46) hash to the gaps, "%" (37) below the table
        for (String s : new String[] {"+", "+", "-", "*", ",", ".", "%"}) { // hits=1 br=2/2
            op(s); // hits=7
        }
        for (String s : new String[] {"a", "e", "a", "b", "zz"}) { // hits=1 br=2/2
            letter(s); // hits=5
        }
        colorStatement(Color.RED); // hits=1
        colorStatement(Color.RED); // hits=1
        colorStatement(Color.GREEN); // hits=1
        colorExpression(Color.RED); // hits=1
        colorExpression(Color.BLUE); // hits=1
        colorExpression(Color.BLUE); // hits=1
        colorExpression(Color.BLUE); // hits=1
    } // hits=1
}
