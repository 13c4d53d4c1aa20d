package dev.retract.kit;

import java.math.BigDecimal;
import java.math.BigInteger;

/**
 * A JSON number as written. Judged as RetractKit judges one: an integer when
 * it is one that fits in 64 bits (signed, or unsigned when written without a
 * fraction), else a number with a fraction.
 */
public final class JsonNumber {
    private static final BigInteger SMALLEST = BigInteger.valueOf(Long.MIN_VALUE);
    private static final BigInteger LARGEST_UNSIGNED = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);

    private final String text;

    public JsonNumber(String text) {
        this.text = text;
    }

    /** The number as the JSON text wrote it. */
    public String text() {
        return text;
    }

    /**
     * The decimal form of the integer this number is, or null when it is not
     * one: {@code 235.0} and {@code 1e3} are integers, {@code 1.5} and
     * {@code 100000000000000000000} are not.
     *
     * <p>As Swift's {@code JSONSerialization} on Linux reads numbers: an
     * integer as written is kept exactly from -2^63 to 2^64-1; so is any
     * number whose text before a lowercase {@code e} is longer than 17
     * characters (it is read as a decimal); any other is read as a double,
     * and is an integer when that double is one that fits in 64 signed bits.
     */
    public String integerText() {
        boolean plain = text.indexOf('.') < 0 && text.indexOf('e') < 0 && text.indexOf('E') < 0;
        int exponent = text.indexOf('e');
        boolean decimal = (exponent < 0 ? text.length() : exponent) > 17;
        if (plain || decimal) {
            BigDecimal exact = new BigDecimal(text);
            if (exact.signum() == 0) return "0";
            exact = exact.stripTrailingZeros();
            if (exact.scale() <= 0) {
                BigInteger integer = exact.toBigIntegerExact();
                if (integer.compareTo(SMALLEST) >= 0 && integer.compareTo(LARGEST_UNSIGNED) <= 0) return integer.toString();
            }
            if (plain) return null;
        }
        double value = doubleValue();
        // Only what a 64-bit signed integer holds exactly, as a double read back.
        if (value == Math.rint(value) && value >= -0x1p63 && value < 0x1p63) return Long.toString((long) value);
        return null;
    }

    double doubleValue() {
        return Double.parseDouble(text);
    }

    /**
     * A double written as Swift's {@code description} writes it, so that
     * messages read the same from both clients: {@code 1.5}, {@code 1e+20},
     * {@code 1e-05}.
     */
    static String swiftDescription(double value) {
        if (Double.isNaN(value)) return "nan";
        if (Double.isInfinite(value)) return value > 0 ? "inf" : "-inf";
        if (value == 0) return (1 / value < 0) ? "-0.0" : "0.0";
        BigDecimal decimal = shortest(Math.abs(value));
        String digits = decimal.unscaledValue().toString();
        int exponent = digits.length() - 1 - decimal.scale();
        String sign = value < 0 ? "-" : "";
        if (exponent < -4 || exponent >= 16) {
            String mantissa = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
            String power = String.format("%02d", Math.abs(exponent));
            return sign + mantissa + "e" + (exponent < 0 ? "-" : "+") + power;
        }
        String plain = decimal.toPlainString();
        return sign + (plain.indexOf('.') < 0 ? plain + ".0" : plain);
    }

    /**
     * The fewest significant digits that read back as {@code value}, as
     * Swift writes a double ({@code Double.toString} before Java 19 does not
     * always give the fewest).
     */
    private static BigDecimal shortest(double value) {
        BigDecimal exact = new BigDecimal(value);
        for (int digits = 1; digits < 17; digits++) {
            BigDecimal rounded = exact.round(new java.math.MathContext(digits, java.math.RoundingMode.HALF_EVEN));
            if (rounded.doubleValue() == value) return rounded.stripTrailingZeros();
        }
        return exact.round(new java.math.MathContext(17, java.math.RoundingMode.HALF_EVEN)).stripTrailingZeros();
    }

    @Override
    public String toString() {
        return text;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof JsonNumber && ((JsonNumber) other).text.equals(text);
    }

    @Override
    public int hashCode() {
        return text.hashCode();
    }
}
